"""Inside a Mininet host, 127.0.0.1:API_PORT reaches the root namespace's job API, out of band;
the relay adds a job's credential only for the hosts the job was granted to, and passes any other
credential through untouched."""
import http.server
import json
import threading

import pytest
from mininet.log import setLogLevel
from mininet.net import Mininet

from p4reduce.mininet_topos.apirelay import ApiRelay, api_source
from p4reduce.mininet_topos.ports import free_port

pytestmark = pytest.mark.root


class EchoPeer(http.server.BaseHTTPRequestHandler):
    """Answers with the TCP peer address it saw and the body it got."""

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        answer = json.dumps({"peer": self.client_address[0], "body": body.decode(),
                             "authorization": self.headers.get("Authorization")}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def test_hosts_reach_the_api_through_the_relay_and_are_identified(node_prefix, tmp_path):
    port = free_port(1)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), EchoPeer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    setLogLevel("warning")
    net = Mininet(controller=None, build=False)
    h1 = net.addHost(f"{node_prefix}h1", ip="10.0.0.1/24")
    h2 = net.addHost(f"{node_prefix}h2", ip="10.0.0.2/24")
    net.addLink(h1, h2)
    relay = ApiRelay(("127.0.0.1", port))
    try:
        net.build()
        relay.add_host(f"/proc/{h1.pid}/ns/net", 1)
        relay.add_host(f"/proc/{h2.pid}/ns/net", 2)
        big = "x" * 200000          # larger than one socket buffer: the relay streams both ways
        (tmp_path / "body").write_text(big)
        for host, index in ((h1, 1), (h2, 2)):
            out = host.cmd(f"curl -s -m 5 -XPOST --data-binary @{tmp_path / 'body'} http://127.0.0.1:{port}/v1/x")
            answer = json.loads(out)
            assert answer["peer"] == api_source(index)
            assert answer["body"] == big
        # Credentials: job j is granted to h1 only; a request's own credential always passes untouched.
        relay.grant("j", "credential-of-job-j-0123456789", [1])

        def auth(host, path, header=""):
            extra = f"-H 'Authorization: {header}'" if header else ""
            out = host.cmd(f"curl -s -m 5 -XPOST {extra} -d '{{}}' http://127.0.0.1:{port}{path}")
            return json.loads(out)["authorization"]
        assert auth(h1, "/v1/jobs/j/join") == "Bearer credential-of-job-j-0123456789"
        assert auth(h1, "/v1/jobs/j/heartbeat") == "Bearer credential-of-job-j-0123456789"
        assert auth(h2, "/v1/jobs/j/join") is None                  # not granted to h2
        assert auth(h1, "/v1/jobs/other/join") is None              # nor another job
        assert auth(h1, "/v1/jobs") is None
        assert auth(h2, "/v1/jobs/j/join", "Bearer mine-0123456789abcdef") == "Bearer mine-0123456789abcdef"
        assert auth(h1, "/v1/jobs/j/join", "Bearer mine-0123456789abcdef") == "Bearer mine-0123456789abcdef"
        relay.revoke("j")
        assert auth(h1, "/v1/jobs/j/join") is None
        # Nothing listens on that port in a namespace the relay was not given.
        assert h1.cmd(f"curl -s -m 2 -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{port + 1}/") == "000"
    finally:
        relay.close()
        net.stop()
        server.shutdown()
    assert api_source(1) == "127.100.0.1" and api_source(300) == "127.100.1.44"
