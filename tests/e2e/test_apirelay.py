"""Inside a Mininet host, 127.0.0.1:API_PORT reaches the root namespace's job API, out of band."""
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
        answer = json.dumps({"peer": self.client_address[0], "body": body.decode()}).encode()
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
        # Nothing listens on that port in a namespace the relay was not given.
        assert h1.cmd(f"curl -s -m 2 -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{port + 1}/") == "000"
    finally:
        relay.close()
        net.stop()
        server.shutdown()
    assert api_source(1) == "127.100.0.1" and api_source(300) == "127.100.1.44"
