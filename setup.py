"""The build step pyproject.toml's metadata cannot express: package data kept at the
repository's top level, and the native scheduler compiled when the package is built.

- `templates/` and `build_rules/` stay where the design puts them (the top level) and are
  installed as the package data `pypto/templates` and `pypto/build_rules` through a
  package-dir mapping: one copy in the repository, found through the package
  (`pypto.resources`) in a wheel and in an editable install alike.
- The native scheduler (`pypto/sim/runtime/scheduler.cpp`) is a plain C++ shared library
  that the runtime opens with ctypes.  It is built here, as the extension
  `pypto.runtime._scheduler`, by the compiler Python's build uses (`CXX`/`CC` override it),
  in a wheel build and in `pip install -e .` alike; the runtime never compiles it.  The
  digest of its sources is compiled in, so that a runtime whose checkout has a newer
  `scheduler.cpp` than the built library says so instead of running stale code.
"""

import sys
from pathlib import Path

from setuptools import Extension, find_namespace_packages, setup

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pypto.resources import scheduler_digest  # noqa: E402 (the checkout's, stdlib only)

DATA_DIRS = {"pypto.templates": "templates", "pypto.build_rules": "build_rules"}

setup(
    # Not build/: that is where SCons builds the kernel library.
    options={"build": {"build_base": "build/setuptools"}},
    packages=[*find_namespace_packages(include=["pypto*", "simpler_setup*"]), *DATA_DIRS],
    package_dir=DATA_DIRS,
    package_data={
        "pypto.templates": ["**/*.j2"],
        "pypto.build_rules": ["**/*.toml"],
        "pypto.sim": ["include/pto/*.h", "include/pto/*.hpp", "runtime/*.cpp"],
        "pypto.toolchain": ["cpu_model/stdfloat"],
    },
    ext_modules=[
        Extension(
            "pypto.runtime._scheduler",
            sources=["pypto/sim/runtime/scheduler.cpp"],
            include_dirs=["pypto/sim/include"],
            language="c++",
            extra_compile_args=["-O2", "-g0", "-std=c++17", "-pthread"],
            extra_link_args=["-pthread"],
            define_macros=[("PNR_SOURCE_DIGEST", f'"{scheduler_digest()}"')],
        )
    ],
)
