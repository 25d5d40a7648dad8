"""MeterEntry (indirect meters): per-cell two-rate three-color configuration.

Direct meters are not configurable in the engine (they always mark GREEN), so DirectMeterEntry
answers UNIMPLEMENTED.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from p4.v1 import p4runtime_pb2

from .errors import call_engine, invalid
from .indexed import cell_indices, require_modify

if TYPE_CHECKING:
    from p4sim.engine import Engine

    from .pipeline import Pipeline



def write(pipeline: Pipeline, engine: Engine, update_type: int, entry: p4runtime_pb2.MeterEntry) -> None:
    info = pipeline.index.meter(entry.meter_id)
    what = f"meter '{info.name}'"
    require_modify("meter", info, update_type)
    name = pipeline.meters[info.id]
    index = entry.index.index if entry.HasField("index") else None
    if index is not None:
        cell_indices("meter", info, entry)
    if entry.HasField("config"):
        config = entry.config
        if config.pir < config.cir:
            raise invalid(f"{what}: pir {config.pir} is below cir {config.cir}")
        call_engine(what, engine.meter_set, name, index, config.cir, config.cburst, config.pir,
                    config.pburst)
    else:
        call_engine(what, engine.meter_reset, name, index)  # no config: back to all-GREEN


def read(pipeline: Pipeline, engine: Engine, entry: p4runtime_pb2.MeterEntry) -> Iterator[p4runtime_pb2.MeterEntry]:
    infos = ([pipeline.index.meter(entry.meter_id)] if entry.meter_id
             else list(pipeline.index.meters.values()))
    for info in infos:
        name = pipeline.meters[info.id]
        for index in (cell_indices("meter", info, entry) if entry.meter_id else range(info.size)):
            out = p4runtime_pb2.MeterEntry(meter_id=info.id)
            out.index.index = index
            config = call_engine(f"meter '{info.name}'", engine.meter_get, name, index)
            if config is not None:
                cir, cburst, pir, pburst = config
                out.config.cir, out.config.cburst = int(cir), int(cburst)
                out.config.pir, out.config.pburst = int(pir), int(pburst)
            yield out
