"""Run the system C preprocessor as p4c does, and map output lines back to source files.

p4c runs ``cpp -undef -nostdinc -x assembler-with-cpp`` with its own include directory; we do the
same with p4sim's include directory (core.p4, v1model.p4). cpp's ``# LINE "FILE"`` markers are
turned into a line map, and the marker lines are blanked so the text keeps its line numbering.
"""
import os
import re
import shutil
import subprocess
from collections.abc import Sequence

from .diagnostics import CompileError, Pos

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
_MARKER = re.compile(r'^#\s*(?:line\s+)?(\d+)\s+"((?:\\.|[^"\\])*)"')


class Source:
    """Preprocessed text plus, for each output line, the (file, line) it came from."""

    def __init__(self, text: str, line_map: list[tuple[str, int]], main_file: str) -> None:
        self.text = text
        self.line_map = line_map
        self.main_file = main_file

    def pos(self, line: int, col: int) -> Pos:
        """Original position of 1-based (line, col) in the preprocessed text."""
        if 1 <= line <= len(self.line_map):
            f, l = self.line_map[line - 1]
            return Pos(f, l, col)
        return Pos(self.main_file, line, col)


def preprocess(path: str, include_dirs: Sequence[str] = (), defines: Sequence[str] = (),
               undefines: Sequence[str] = (), cpp: str | None = None) -> Source:
    """Preprocess ``path``; raise CompileError with cpp's own message if it fails."""
    cpp = cpp or shutil.which("cpp")
    if cpp is None:
        raise CompileError("the C preprocessor 'cpp' was not found on PATH (Debian package 'cpp')")
    if not os.path.isfile(path):
        raise CompileError(f"{path}: no such file")
    cmd = [cpp, "-undef", "-nostdinc", "-x", "assembler-with-cpp", "-I", INCLUDE_DIR]
    for d in include_dirs:
        cmd += ["-I", d]
    cmd += ["-D__p4sim__", "-D__TARGET_BMV2__", "-D__v1model_version=20200408"]
    for d in defines:
        cmd += ["-D", d]
    for u in undefines:
        cmd += ["-U", u]
    cmd.append(path)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        msg = proc.stderr.strip() or f"cpp failed with exit code {proc.returncode}"
        raise _CppFailed(msg)
    return parse_markers(proc.stdout, path)


class _CppFailed(CompileError):
    """cpp already printed file:line:col diagnostics; pass them through unchanged."""

    def render(self):
        return self.message


def parse_markers(text: str, main_file: str) -> Source:
    """Blank cpp line markers and build the output-line -> (file, line) map."""
    lines = text.split("\n")
    line_map = []
    cur_file, cur_line = main_file, 1
    for i, ln in enumerate(lines):
        if ln.startswith("#"):
            m = _MARKER.match(ln)
            if m:
                cur_line = int(m.group(1))
                cur_file = m.group(2).encode().decode("unicode_escape")
                lines[i] = ""
                line_map.append((cur_file, 0))
                continue
            if re.match(r"^#\s*pragma\b", ln):
                lines[i] = ""
        line_map.append((cur_file, cur_line))
        cur_line += 1
    return Source("\n".join(lines), line_map, main_file)
