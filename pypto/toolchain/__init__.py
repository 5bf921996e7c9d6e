"""From generated sources to a published artifact: compilers, content keys, the cache.

Reads platform data through `pypto.platform`; the cache checks entries with the runtime's
own `verify_artifact`.  The runtime never imports this package.
"""

from pypto.toolchain.build import ORCHESTRATION_ENTRY, build_artifact
from pypto.toolchain.cache import (
    ArtifactCache,
    CacheLockTimeoutError,
    CacheStorageError,
    CorruptCacheEntryWarning,
    default_cache_root,
)
from pypto.toolchain.compiler import CompileError, Toolchain, ToolchainNotFoundError
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
    "NEUTRAL_ENV_VARS",
    "ORCHESTRATION_ENTRY",
    "OUTPUT_ENV_VARS",
    "ArtifactCache",
    "CacheLockTimeoutError",
    "CacheStorageError",
    "CorruptCacheEntryWarning",
    "CompileError",
    "Toolchain",
    "ToolchainNotFoundError",
    "artifact_key",
    "build_artifact",
    "code_digest",
    "compiler_digest",
    "compiler_sources",
    "content_key",
    "default_cache_root",
    "templates_digest",
    "tree_digest",
]
