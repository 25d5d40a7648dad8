"""`pip install` as a user does it: the wheel built from this checkout, installed into a clean venv
per extra (no --system-site-packages, nothing of the checkout on the path), and every console
script the install provides run with --help and with one real call.

The base install is a worker host: numpy and tqdm, the worker CLI, nothing of the controller, no
benchmark, result or demo file. The controller's commands without their extra say which extra to
install, in one line. torch comes from the machine's own 2.13.0 wheel (the extra's range would
otherwise take the newest build on the index)."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import venv

import pytest

pytestmark = pytest.mark.slow

REPO = pathlib.Path(__file__).resolve().parents[2]
TORCH_TESTED = "torch==2.13.0"


def _run(argv, cwd, timeout=900, **kw):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, **kw)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("wheel")
    p = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", out, REPO],
             cwd=out)
    assert p.returncode == 0, p.stderr[-3000:]
    (whl,) = out.glob("p4reduce-*.whl")
    return whl


class Venv:
    def __init__(self, root: pathlib.Path):
        venv.create(root, with_pip=True, clear=True)
        self.root = root
        self.bin = root / "bin"

    def pip(self, *args: str) -> subprocess.CompletedProcess:
        p = _run([self.bin / "python", "-m", "pip", "install", "-q", *args], cwd=self.root)
        assert p.returncode == 0, p.stderr[-3000:]
        return p

    def run(self, *argv, cwd=None) -> subprocess.CompletedProcess:
        return _run([self.bin / argv[0], *argv[1:]], cwd=cwd or self.root, timeout=300)

    def packages(self) -> set[str]:
        p = self.run("python", "-m", "pip", "list", "--format=json")
        return {d["name"].lower() for d in json.loads(p.stdout)}

    def site(self) -> pathlib.Path:
        return pathlib.Path(self.run("python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
                            .stdout.strip())


def test_the_base_install_is_a_worker_host(wheel, tmp_path):
    env = Venv(tmp_path / "base")
    env.pip(str(wheel))
    assert env.packages() - {"pip", "setuptools"} == {"p4reduce", "numpy", "tqdm"}
    helped = env.run("p4reduce-worker", "--help")
    assert helped.returncode == 0 and "allreduce" in helped.stdout, helped.stderr
    listed = env.run("p4reduce-worker", "compressors")
    assert listed.returncode == 0 and "topk" in listed.stdout and "terngrad" in listed.stdout, listed.stderr
    # a real call of the worker library: quantize and restore a tensor as the switch path does
    q = env.run("python", "-c", "import numpy as np; from p4reduce.worker import quantize as q; "
                "x = np.linspace(-1, 1, 1000, dtype=np.float32); "
                "e = q.propose_exponents(x, 100); "
                "print(float(np.abs(q.dequantize(q.quantize(x, e, 4, 100), e, 4, 100) - x).max()))")
    assert q.returncode == 0 and float(q.stdout) < 1e-6, q.stderr
    for command in ("p4reduce-controller", "p4sim-compile", "p4sim-switch"):
        p = env.run(command, "--help")
        assert p.returncode == 2 and "Traceback" not in p.stderr, (command, p.stderr)
        assert p.stderr.strip().count("\n") == 0 and "pip install 'p4reduce[controller]'" in p.stderr, p.stderr
    installed = env.site()
    assert (installed / "p4sim").is_dir() and not (installed / "lab").exists()
    product = [str(f.relative_to(installed)) for f in (installed / "p4reduce").rglob("*")]
    assert not [f for f in product if "bench" in f or "results" in f or "training" in f or f.endswith(".png")], product


def test_the_controller_extra_runs_the_controller_and_p4sim(wheel, tmp_path):
    env = Venv(tmp_path / "controller")
    env.pip(f"{wheel}[controller]")
    assert "p4runtime-shell" not in env.packages() and "ipython" not in env.packages()
    for command in ("p4reduce-controller", "p4sim-compile", "p4sim-switch"):
        p = env.run(command, "--help")
        assert p.returncode == 0 and "usage:" in p.stdout, (command, p.stderr)
    topo = env.run("p4reduce-controller", "topology", "--grpc", "127.0.0.1:9559",
                   "--host", "h1=10.0.0.1,00:00:00:00:00:01,1")
    assert topo.returncode == 0, topo.stderr
    assert [h["ip"] for h in json.loads(topo.stdout)["hosts"]] == ["10.0.0.1"]
    # the installed aggregation program compiles with the installed compiler
    src = env.run("python", "-c", "import p4reduce; print(p4reduce.P4SRC_DIR / 'p4reduce.p4')").stdout.strip()
    out = tmp_path / "p4reduce.json"
    compiled = env.run("p4sim-compile", "--p4v", "16", "-o", out, "--p4runtime-files", tmp_path / "p4info.txtpb", src)
    assert compiled.returncode == 0, compiled.stderr[-2000:]
    tables = {t["name"] for pipe in json.loads(out.read_text())["pipelines"] for t in pipe["tables"]}
    assert "ReduceIngress.forwarding.ipv4_routes" in tables
    shell = env.run("p4reduce-controller", "shell", "--help")
    assert shell.returncode == 0, shell.stderr


def test_the_shell_extra_brings_the_p4runtime_shell(wheel, tmp_path):
    env = Venv(tmp_path / "shell")
    env.pip(f"{wheel}[shell]")
    p = env.run("python", "-c", "import p4runtime_sh.shell, google.protobuf; print(google.protobuf.__version__)")
    assert p.returncode == 0 and p.stdout.startswith("3.20."), p.stderr[-2000:]


def test_the_torch_extra_registers_the_backend_and_the_bench_extra_runs_the_lab(wheel, tmp_path):
    env = Venv(tmp_path / "torch")
    env.pip(f"{wheel}[torch]", TORCH_TESTED)
    p = env.run("python", "-c", "import torch.distributed as dist, p4reduce.distributed as d; "
                "print(d.BACKEND.upper() in dist.Backend._plugins)")
    assert p.returncode == 0 and p.stdout.strip() == "True", p.stderr[-2000:]
    env.pip(f"{wheel}[bench]", TORCH_TESTED)
    # the lab runs from a checkout with the installed package (the checkout's p4reduce is not on the path:
    # the lab folder alone is)
    lab_only = tmp_path / "lab_only"
    lab_only.mkdir()
    (lab_only / "lab").symlink_to(REPO / "lab")
    bench = env.run("python", "-m", "lab.bench", "--help", cwd=lab_only)
    assert bench.returncode == 0 and "usage:" in bench.stdout, bench.stderr[-2000:]
