"""A stream whose client stops reading: messages beyond the outbox are dropped, never blocking the
packet path, and closing the stream still works."""
from p4.v1 import p4runtime_pb2

from p4sim.runtime.arbitration import StreamSession


def test_full_outbox_drops_and_close_never_blocks():
    session = StreamSession("test")
    capacity = session.outbox.maxsize
    message = p4runtime_pb2.StreamMessageResponse()
    message.packet.payload = b"x"
    for _ in range(capacity + 100):
        session.send(message)
    assert session.outbox.qsize() == capacity
    assert session.dropped_in_a_row == 100
    session.close()  # must not block although the outbox is full
    items = [session.outbox.get_nowait() for _ in range(session.outbox.qsize())]
    assert items[-1] == ("close", None)
    assert len(items) == capacity
