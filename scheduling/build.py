"""Compile the hot modules with mypyc: ``python -m scheduling.build`` (see scheduling.compiled)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from scheduling.compiled import BUILD_DIR, COMPILED, PACKAGE, STAMP, current_stamp, stale_reason


def build() -> None:
    """Compile COMPILED into BUILD_DIR (about 30 s) and stamp it; the stamp is written last, so
    a failed build leaves no usable stamp."""
    from mypyc.build import mypycify
    from setuptools import setup

    root = PACKAGE.parent
    shutil.rmtree(BUILD_DIR, ignore_errors=True)
    paths = [str(Path("scheduling") / "replay" / name) for name in COMPILED]
    with tempfile.TemporaryDirectory() as temp:
        cwd = os.getcwd()
        os.chdir(root)  # mypyc names modules after paths relative to the working directory
        try:
            extensions = mypycify(
                # Only the compiled modules must type-check; the rest is imported as Python.
                ["--follow-imports=silent", *paths],
                opt_level="3",
                # The modules' shared library, inside the package so that its path finds it.
                group_name="scheduling.native",
                target_dir=str(Path(temp) / "c"),
            )
            setup(
                name="scheduling-compiled",
                py_modules=[],
                ext_modules=extensions,
                script_args=["-q", "build_ext", "--build-lib", str(BUILD_DIR), "--build-temp", temp],
            )
        finally:
            os.chdir(cwd)
    STAMP.write_text(json.dumps(current_stamp(), indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--if-stale", action="store_true", help="do nothing when the build is fresh")
    if parser.parse_args().if_stale and stale_reason() is None:
        return
    print(f"scheduling.build: compiling {', '.join(COMPILED)} (about 30 s)", flush=True)
    try:
        build()
    except (Exception, SystemExit) as error:  # setuptools reports compiler failures as SystemExit
        print(f"scheduling.build: build failed ({error}); the engine runs as pure Python", file=sys.stderr)
        sys.exit(1)
    print(f"scheduling.build: built {', '.join(COMPILED)} into {BUILD_DIR}")


if __name__ == "__main__":
    main()
