"""p4sim-compile's command line: p4c-bm2-ss-compatible flags, exit codes and output formats."""
import json
import os
import subprocess
import sys

import pytest
from compiler_helpers import program, write
from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2

from p4sim.compiler.cli import main

TABLE = ("action set(bit<8> v) { meta.a = v; } "
         "table t { key = { hdr.eth.etype: exact; } actions = { set; NoAction; } default_action = NoAction(); } "
         "apply { t.apply(); }")


@pytest.fixture
def src(tmp_path):
    return write(tmp_path, program(ingress=TABLE))


def test_full_p4c_command_line(tmp_path, src, capsys):
    out = tmp_path / "out.json"
    info = tmp_path / "out.p4info.txtpb"
    rc = main(["--p4v", "16", "--std", "p4-16", "--target", "bmv2", "--arch", "v1model",
               "--p4runtime-files", str(info), "-o", str(out), str(src)])
    assert rc == 0
    assert capsys.readouterr().err == ""
    doc = json.loads(out.read_text())
    assert [t["name"] for t in doc["pipelines"][0]["tables"]] == ["Ing.t"]
    text = info.read_text()
    assert text.startswith("# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n")
    msg = text_format.Parse(text, p4info_pb2.P4Info())
    assert [t.preamble.name for t in msg.tables] == ["Ing.t"]


def test_p4info_formats_by_extension(tmp_path, src):
    paths = {ext: tmp_path / f"p4info{ext}" for ext in (".txt", ".txtpb", ".bin", ".json")}
    rc = main(["--p4runtime-files", ",".join(str(p) for p in paths.values()), "-o", str(tmp_path / "o.json"),
               str(src)])
    assert rc == 0
    from_txt = text_format.Parse(paths[".txt"].read_text(), p4info_pb2.P4Info())
    from_txtpb = text_format.Parse(paths[".txtpb"].read_text(), p4info_pb2.P4Info())
    from_bin = p4info_pb2.P4Info.FromString(paths[".bin"].read_bytes())
    from_json = json_format.Parse(paths[".json"].read_text(), p4info_pb2.P4Info())
    assert from_txt == from_txtpb == from_bin == from_json
    assert [a.preamble.name for a in from_bin.actions] == ["NoAction", "Ing.set"]


def test_defines_and_include_dirs(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "consts.p4").write_text("const bit<8> FROM_INCLUDE = 7;\n")
    text = program(decls="#include <consts.p4>",
                   ingress="apply { meta.a = FROM_INCLUDE; meta.b = VALUE; }")
    src = write(tmp_path, text)
    out = tmp_path / "o.json"
    assert main(["-I", str(tmp_path / "lib"), "-DVALUE=9", "-o", str(out), str(src)]) == 0
    prims = [p for a in json.loads(out.read_text())["actions"] for p in a["primitives"]]
    assert {"type": "hexstr", "value": "0x07"} in [p["parameters"][1] for p in prims]
    assert {"type": "hexstr", "value": "0x09"} in [p["parameters"][1] for p in prims]
    assert main(["-I", str(tmp_path / "lib"), "-D", "VALUE=10", "-o", str(out), str(src)]) == 0
    prims = [p for a in json.loads(out.read_text())["actions"] for p in a["primitives"]]
    assert {"type": "hexstr", "value": "0x0a"} in [p["parameters"][1] for p in prims]


def test_default_output_name(tmp_path, src, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([str(src)]) == 0
    assert (tmp_path / "prog.json").is_file()


def test_compile_error_exit_code_and_stderr(tmp_path, capsys):
    src = write(tmp_path, program(ingress="apply { meta.a = oops; }"))
    out = tmp_path / "o.json"
    assert main(["-o", str(out), str(src)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(str(src) + ":") and "error: undeclared name 'oops'" in err
    assert "Traceback" not in err
    assert not out.exists()


def test_bad_command_lines(tmp_path, src, capsys):
    assert main(["--p4v", "14", str(src)]) == 2
    assert "only P4_16" in capsys.readouterr().err
    assert main([]) == 2
    assert main(["--p4runtime-files", str(tmp_path / "x.yaml"), str(src)]) == 2
    assert "unknown format" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["--no-such-flag", str(src)])
    assert e.value.code == 2
    assert main([str(tmp_path / "missing.p4")]) == 1


def test_warnings_and_werror(tmp_path, capsys):
    src = write(tmp_path, program(ingress="apply { meta.a = 300; }"))
    assert main(["-o", str(tmp_path / "o.json"), str(src)]) == 0
    assert "warning: value 300 does not fit in bit<8>; it is truncated to 44" in capsys.readouterr().err
    assert main(["--Werror", "-o", str(tmp_path / "o.json"), str(src)]) == 1


def test_module_entry_point(tmp_path, src):
    out = tmp_path / "m.json"
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-m", "p4sim.compile", "--p4v", "16", "-o", str(out), str(src)],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["program"] == str(src)


def test_legacy_p4runtime_file_and_format(tmp_path, src):
    out = tmp_path / "legacy.p4info"
    assert main(["--p4runtime-file", str(out), "--p4runtime-format", "text", "-o", str(tmp_path / "o.json"),
                 str(src)]) == 0
    assert text_format.Parse(out.read_text(), p4info_pb2.P4Info()).tables[0].preamble.name == "Ing.t"
    assert main(["--p4runtime-file", str(out), "-o", str(tmp_path / "o.json"), str(src)]) == 0
    assert p4info_pb2.P4Info.FromString(out.read_bytes()).tables[0].preamble.name == "Ing.t"


def test_wdisable_silences_warnings(tmp_path, capsys):
    src = write(tmp_path, program(ingress="apply { meta.a = 300; }"))
    assert main(["--Wdisable", "--Werror", "-o", str(tmp_path / "o.json"), str(src)]) == 0
    assert main(["--Wdisable=overflow", "-o", str(tmp_path / "o.json"), str(src)]) == 0
    assert capsys.readouterr().err == ""


def test_duplicate_id_annotation_is_a_located_error(tmp_path, capsys):
    src = write(tmp_path, program(ingress="@id(5) action a() { } @id(5) action b() { } "
                                          "table t { key = { meta.a: exact; } actions = { a; b; } } apply { t.apply(); }"))
    assert main(["--p4runtime-files", str(tmp_path / "p.txtpb"), "-o", str(tmp_path / "o.json"), str(src)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(str(src) + ":12:") and "error: @id 5 of 'Ing.b' is already used" in err
