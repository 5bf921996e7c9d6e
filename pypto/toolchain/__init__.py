"""From generated sources to a published artifact: compilers, content keys, the cache.

Reads platform data through `pypto.platform`; the cache checks entries with the runtime's
own `verify_artifact`.  The runtime never imports this package.
"""

from pypto.toolchain.build import (
    ORCHESTRATION_ENTRY,
    ArtifactPlan,
    build_artifact,
    finish_artifact,
    run_plan,
    stage_artifact,
)
from pypto.toolchain.cache import (
    ArtifactCache,
    CacheStorageError,
    CorruptCacheEntryWarning,
    TrimResult,
    cache_size,
    default_cache_root,
    parse_size,
    trim,
    trim_if_due,
)
from pypto.toolchain.compiler import (
    LAUNCHER_ENV,
    CompileError,
    Step,
    Toolchain,
    ToolchainNotFoundError,
    compiler_launcher,
    run_step,
)
from pypto.toolchain.key import (
    KEY_SCHEMA_VERSION,
    NEUTRAL_ENV_VARS,
    OUTPUT_ENV_VARS,
    artifact_key,
    code_digest,
    compiler_digest,
    compiler_sources,
    content_key,
    templates_digest,
    tree_digest,
)

__all__ = [
    "KEY_SCHEMA_VERSION",
    "LAUNCHER_ENV",
    "NEUTRAL_ENV_VARS",
    "ORCHESTRATION_ENTRY",
    "OUTPUT_ENV_VARS",
    "ArtifactCache",
    "ArtifactPlan",
    "CacheStorageError",
    "CorruptCacheEntryWarning",
    "CompileError",
    "Step",
    "Toolchain",
    "ToolchainNotFoundError",
    "TrimResult",
    "artifact_key",
    "build_artifact",
    "cache_size",
    "code_digest",
    "compiler_digest",
    "compiler_launcher",
    "compiler_sources",
    "content_key",
    "default_cache_root",
    "finish_artifact",
    "parse_size",
    "run_plan",
    "run_step",
    "stage_artifact",
    "templates_digest",
    "tree_digest",
    "trim",
    "trim_if_due",
]
