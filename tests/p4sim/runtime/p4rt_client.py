"""A small raw-proto P4Runtime client for tests (no p4runtime-shell state): one channel, one
StreamChannel with arbitration, Write/Read helpers that return the gRPC error instead of raising."""
import queue
import threading

import grpc
from google.protobuf import text_format
from google.rpc import status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc


def load_p4info(path) -> p4info_pb2.P4Info:
    info = p4info_pb2.P4Info()
    with open(path) as handle:
        text_format.Merge(handle.read(), info, allow_unknown_field=True)
    return info


def write_errors(rpc_error):
    """[(index, code number, message)] of the p4.v1.Error details of a failed Write."""
    out = []
    for key, value in rpc_error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status()
            status.ParseFromString(value)
            for index, detail in enumerate(status.details):
                error = p4runtime_pb2.Error()
                detail.Unpack(error)
                out.append((index, error.canonical_code, error.message))
    return out


class RawClient:
    def __init__(self, address, device_id=1, election_id=1, arbitrate=True, role=None):
        self.channel = grpc.insecure_channel(address)
        grpc.channel_ready_future(self.channel).result(timeout=10)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.device_id = device_id
        self.election_id = election_id
        self.role = role
        self.outgoing = queue.Queue()
        self.incoming = queue.Queue()
        self.stream = None
        if arbitrate:
            self.open_stream()
            self.arbitrate(election_id)

    # -- stream --------------------------------------------------------------------------------
    def open_stream(self):
        def requests():
            while True:
                item = self.outgoing.get()
                if item is None:
                    return
                yield item
        self.stream = self.stub.StreamChannel(requests())

        def pump():
            try:
                for response in self.stream:
                    self.incoming.put(response)
            except grpc.RpcError as exc:
                self.incoming.put(exc)
        threading.Thread(target=pump, daemon=True).start()

    def arbitrate(self, election_id, device_id=None):
        self.election_id = election_id
        request = p4runtime_pb2.StreamMessageRequest()
        request.arbitration.device_id = self.device_id if device_id is None else device_id
        request.arbitration.election_id.high = election_id >> 64
        request.arbitration.election_id.low = election_id & ((1 << 64) - 1)
        if self.role is not None:
            request.arbitration.role.name = self.role
        self.outgoing.put(request)
        return self.next_message("arbitration")

    def next_message(self, kind=None, timeout=5):
        """Next stream message (of `kind` if given); an RpcError if the stream ended with one."""
        while True:
            item = self.incoming.get(timeout=timeout)
            if isinstance(item, grpc.RpcError):
                return item
            if kind is None or item.HasField(kind):
                return item

    def packet_out(self, payload, metadata=()):
        request = p4runtime_pb2.StreamMessageRequest()
        request.packet.payload = payload
        for metadata_id, value in metadata:
            request.packet.metadata.add(metadata_id=metadata_id, value=value)
        self.outgoing.put(request)

    # -- RPCs ----------------------------------------------------------------------------------
    def set_pipeline(self, p4info, device_config, action=None, cookie=None):
        request = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=self.device_id)
        request.election_id.high = self.election_id >> 64
        request.election_id.low = self.election_id & ((1 << 64) - 1)
        request.action = (p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
                          if action is None else action)
        if p4info is not None:
            request.config.p4info.CopyFrom(p4info)
        if device_config is not None:
            request.config.p4_device_config = device_config
        if cookie is not None:
            request.config.cookie.cookie = cookie
        return self.stub.SetForwardingPipelineConfig(request)

    def write(self, *updates, election_id=None):
        request = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        election = self.election_id if election_id is None else election_id
        request.election_id.high = election >> 64
        request.election_id.low = election & ((1 << 64) - 1)
        if self.role is not None:
            request.role = self.role
        request.updates.extend(updates)
        return self.stub.Write(request)

    def read(self, *entities):
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        request.entities.extend(entities)
        out = []
        for response in self.stub.Read(request):
            out.extend(response.entities)
        return out

    def close(self):
        self.outgoing.put(None)
        if self.stream is not None:
            self.stream.cancel()
        self.channel.close()


def update(kind, **entity):
    return p4runtime_pb2.Update(type=getattr(p4runtime_pb2.Update, kind),
                                entity=p4runtime_pb2.Entity(**entity))
