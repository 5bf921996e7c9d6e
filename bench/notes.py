"""The hand-written part of docs/performance.md: what the numbers mean and what changed."""

CHANGES = [
    # (measurement, before, after, what the profile showed -> the change)
    (
        'JIT warm call, [16, 32] add',
        '1.4-2.8 ms (470-920x torch)',
        '0.38-0.52 ms (130-200x)',
        'two worker threads started and joined per run (~200 µs each) → a '
        'process-wide worker pool (`scheduler._WorkerPool`); two `SimCore`s zero-'
        'filling ~1 MiB of ctypes arrays each (~215 µs) → one lazily zeroed '
        'anonymous mapping per core (~15 µs); a `RunConfig()` built per call (~70'
        ' µs of build_rules lookups) → one shared default; `os.cpu_count()` per '
        'run; the waiting thread slept while a worker woke up → it runs ready '
        'tasks itself; inputs poisoned then overwritten → cloned once',
    ),
    (
        '10,000-task graph, per task',
        '57-69 µs',
        '34-45 µs',
        'full GC passes over the torch-sized heap (~80 ms each, several per run) '
        '→ the cyclic GC paused between `Scheduler.start` and `close`; ctypes '
        'field reads per argument → one `struct` unpack of the argument bytes; a '
        'list and a Condition per task/run → lazily created, shared',
    ),
    (
        'FP16 matmul 512³ (kernel)',
        '3.97 s (150x torch)',
        '0.13 s (5x)',
        'two out-of-line FP16 widenings per multiply-add and a column walk of B →'
        ' operands widened once per tile, row-major i-k-j loop over float rows '
        'vectorised by chunks; each c[i][j] still sums a[i][k]·b[k][j] in K '
        'order, so the bits are identical',
    ),
    (
        'add 4M FP32 (kernel time)',
        '56-64 ms',
        '20-33 ms',
        'per-element bounds checks in tload/tstore and a lambda per element -> one '
        'memcpy per contiguous row; element-wise loops in chunks of 8 read before '
        'written, which GCC -O2 vectorises (same IEEE operations, same bits)',
    ),
    (
        'softmax [4096, 1024] (kernel time)',
        '212-240 ms',
        '49-182 ms',
        'as above for the broadcast divide; the reductions stay sequential (contract)',
    ),
    (
        'add 4M FP16 (kernel time)',
        '505-738 ms',
        '76 ms',
        'two out-of-line generic conversions (decompose/encode) per operand and result '
        '-> an inline bit-manipulating FP16 widen/round, equal to the generic converter '
        'on all 2^16 halves and all 2^32 floats (checked once; tests/sim checks every '
        'half and ~3M floats on every rounding boundary)',
    ),
    (
        'matmul 512³ FP32 / FP16 → FP32 (kernel time)',
        '40-75 ms / 38-57 ms',
        '8.1-8.5 ms / 5.2-14 ms',
        'the i-k-j loop kept its row of sums in memory (a load and a store per multiply-'
        'add) → a register-tiled micro-kernel (mr × nr sums in vector registers for the '
        'whole K loop, operands packed once per call) in GCC generic vectors, SSE2 '
        'everywhere and AVX2 / AVX-512F picked at run time (same file on every host); '
        'still one rounded multiply and one rounded add per k for each c[i][j], never '
        'fused (an empty asm keeps GCC from contracting them even without '
        '-ffp-contract=off); then packing (strided scatter → rows interleaved mr at a '
        'time) and `tmov` (an element loop → one memmove)',
    ),
    (
        'add 4M FP16 (kernel time)',
        '21-43 ms',
        '5.0-8.8 ms',
        'scalar widen/round per element → whole blocks widened, computed in float and '
        'rounded back by F16C (`vcvtph2ps`/`vcvtps2ph` + canonical NaN) where the CPU '
        'has it, else a branch-free SSE2 form; BF16 the same way (a shift and an RNE '
        'add) instead of the generic converter (~20x); casts FP16/BF16 ↔ FP32 too. '
        'Every form equals `convert<>` on all 2^16 inputs and all 2^32 floats (checked '
        'once; tests/sim checks every input and each rounding boundary)',
    ),
    (
        'softmax [4096, 1024] (kernel time)',
        '27-68 ms',
        '21-22 ms',
        'one dependent add at a time in the row reductions → four rows reduced at once, '
        'each still strictly left to right; broadcasts row by row over the vectorised '
        'loops; what is left is libm `expf` per element',
    ),
    (
        'JIT warm call, [16, 32] add (second round)',
        '303-802 µs (118-171x torch)',
        '16-42 µs (7-15x)',
        'Python scheduler per run (ctypes callbacks, OverlapMap, worker hand-off under the '
        'GIL) → native C++ scheduler; ~400 KB of C++ allocations faulted in per run → '
        'small growing arenas; cores and parameter buffers built per call → pooled per '
        'program; four torch copy/fill ops per call → one native memcpy pass; the JIT key '
        '(tuple(shape), str(dtype), an import statement per call) → torch.Size/dtype as '
        'they are, one attrgetter',
    ),
    (
        '10,000-task graph, per task (second round)',
        '40-70 µs',
        '1.0-2.0 µs',
        'a C → Python callback, argument decoding, OverlapMap and a worker hand-off per '
        'task → dependency inference and the ready queue in C++, kernels called from '
        'native threads',
    ),
    (
        'open a 100-kernel library (200 variants)',
        '132-436 ms (11-16x parsing its 401 JSON files)',
        '1.5-2.4 ms (0.07-0.13x)',
        'every manifest and golden.json parsed and every binary and tensor file hashed at '
        'open → the index records its own sha256 and is the one file read and checked at '
        'open; each variant is checked as a whole (same hashes, same refusals naming the '
        'file) on its first use, `Library.verify()` checks all',
    ),
    (
        'no-op rebuild, 100 specs',
        '1.29-2.00 s (0.97-0.98x plain SCons)',
        '0.93-1.45 s (0.68-0.78x)',
        'the default environment searching PATH for compilers (`Glob`/`Alias`/`Help`) → '
        '`DefaultEnvironment(tools=[])`; the spec reader (IR, goldens, runtime, ~0.1 s) '
        'imported though no spec ran → imported on a new meaning only; 300 Value nodes '
        '(IR, compiler, meaning digests) → digests in the action signature; per-target '
        '`Precious`/`NoCache`/`Clean` calls and 200 undemanded check targets → batched, '
        'declared when asked; pathlib in the spec index → strings, memoised closures; '
        '`implicit_cache`',
    ),
    (
        'add 4M FP32 as 8 tasks (resident, per 512 × 1024 task)',
        '0.63-0.75 ms a task; 2.1-2.6x torch.add',
        '0.39-0.44 ms a task; 1.5-1.7x',
        'the add itself was a third of a task: its chunk loop copied each 8-float chunk '
        'to the stack in 16-byte halves and read it back in 32-byte loads (a store-'
        'forwarding stall), in SSE2 → chunks of 32 bytes held in GCC vector registers, '
        'and the float loops also built for AVX2 and taken where the CPU has it (no FMA, '
        'same IEEE operations: tests/sim checks FP32, FP16, BF16, INT8, INT32 and the '
        'portable loop against `elem<>`); ~3x on the add, kernels compile ~10% slower. '
        'The benchmark also timed torch right before us: torch\'s OpenMP threads spin '
        'for a few ms after each op and took the cores from the next call (1.6x on ours) '
        '→ ours and torch alternate with a 10 ms pause between calls',
    ),
    (
        'JIT warm call, [16, 32] add (third round)',
        '11.6-12.4 µs (9-10x torch.add on a quiet machine)',
        '10.1-10.5 µs (8.5x)',
        'the call key mapped a normalising function over the config\'s compile fields (~1 '
        'µs) → the fields as they are, normalised only when one is a list or set; a '
        '`ProgramRun` built per call → a plain native run goes straight to '
        '`RunReuse.run_native`, which `ProgramRun` shares for golden and DFX runs. What is '
        'left: ~2 µs in the native run, ~1.6 µs binding arguments, ~1 µs checking them',
    ),
    (
        'add 4M FP32 as 8 tasks, plain call',
        '14.5-14.6 ms (5.5x torch.add)',
        '7.5-8.2 ms (3.5-3.8x)',
        'copies in, poison fills and copies out (64 MB) all on the calling thread, ~6.4 GB/s '
        '→ past 4 MB each is cut into one share per thread (up to the run\'s cores and the '
        'host\'s CPUs, 64-byte boundaries), the calling thread among them: one thread does '
        'not saturate memory bandwidth (the same 64 MB: 6.3 ms on one thread, 3.7 ms on two)',
    ),
]

_NOTES = """
## Reading the numbers

- **Build**: the cold build compiles one shared kernel body and generates 200 goldens;
  the no-op is SCons deciding from content signatures without importing torch.  The
  edit row counts the declared targets the rebuild wrote (its spec's only); about two
  thirds of its time is importing torch (~2 s here) to generate the edited spec's goldens,
  the rest reading the SConstruct (~0.45 s) and compiling its two variants (~0.7 s).
- **Compile**: "pypto" is parse + passes + codegen, "peer" the host compiler on every
  generated source in turn; the note splits our part by stage.
- **Dispatch**: plain runs take the native C++ scheduler (`pypto/sim/runtime/
  scheduler.cpp`): the orchestration's submits, dependency inference over byte ranges
  and the ready queue are C++, and native worker threads call kernels without the GIL.
  A warm JIT call is the JIT key lookup (~1-4 µs), copying inputs into the program's
  reused parameter buffers, re-poisoning its outputs and copying results back, and one
  native run.  The per-task row also reports the Python scheduler (the reference, used
  for seeded, race-checked and dumping runs) measured in the same run.
- **Simulator**: "resident" runs on a `ChipWorker` whose tensors live in device memory
  (kernel and dispatch only); "plain call" also copies inputs into the program's device
  buffers (reused from call to call), poisons the outputs with NaN and copies them back,
  48-64 MB of memory traffic for these problems, split across the host's cores past
  4 MB.  torch uses both host cores for element-wise work; the
  simulated kernels here are one task on one core, except the `tasks` add, written as a
  multi-core kernel would be (8 row blocks, run at once on the simulated cores).  Its
  remaining gap is the tile program itself: every element crosses memory three times, as
  on the device (global memory → on-chip tile, the add, tile → global memory), where
  torch streams it once.  Ours and torch are timed in alternation, 10 ms apart, nine runs
  at least; the ratio is of the two medians.  Row reductions are sequential by the
  numerics contract and exp is the simulator's own (fmath.hpp: the same bits on every
  host, ~2.5x glibc's expf an element), which bounds softmax.  Exact
  FP16 costs what the FP16 rows show against their FP32 twins: every FP16 operand is
  widened to float and every result rounded back to FP16, bit-exactly, after each
  instruction (F16C or SSE2 over whole blocks, ~0.1-0.8 ns an element; BF16 likewise;
  FP8 still takes the generic out-of-line path); the FP16 matmul widens each operand
  once per tile and then runs the FP32 kernel.  Matmul against torch: torch calls a
  BLAS (oneDNN/MKL) that blocks K and sums partial products in an order of its own,
  fuses multiply and add (FMA) and runs on both cores; the simulator must keep one
  rounded multiply and one rounded add per k, in K order, per element (the numerics
  contract), on one core: without FMA its peak is half the BLAS's on the same vector
  unit, and half again against torch's two threads, before the copies the tile program
  itself makes (tload / tmov of every operand tile, ~1/3 of the FP32 kernel's time at
  its 32 × 32 × 512 tiles).
  These VMs are shared: the torch peers moved 1-36 ms between runs, so read the kernel
  times in the notes rather than the ratios.

## What the profile showed, and what changed (issue 9)

Measured before and after on the same machine in the same time window (it was shared
and loaded: take the ranges, not single numbers).

{changes}

## Left to do

- FP8 element-wise: the block treatment FP16/BF16 got (checked exhaustively the same
  way).  Matmul: a K-blocked packing for K beyond ~2k (the packed panels then leave
  L1/L2) and reading float operands in place instead of packing them.
- A variant's first use costs ~1.1-1.4 ms, ~6x hashing its files alone: parsing the
  manifest and golden.json into their dataclasses and `Path.resolve` per binary in the
  loader; the no-op build's remaining time is SCons' own per-node work (~1000 file
  nodes, 400 `.sconsign` directory entries rewritten on every run) and importing
  `pypto.toolchain` and `pypto.platform` (~30 ms) for the compiler digest.
- Softmax is bound by exp: fmath.hpp's float64 algorithm, two doubles per SSE2 vector
  (~3.7 ns an element against glibc expf's ~1.4 ns); AVX2 lanes or a table-driven
  reduction (a shorter polynomial) would speed it up, kept bit-identical to
  `pypto.golden.fp64`.
- Kernels compile ~1.6-1.8x slower with the sim headers' fast paths (FP16 and matmul
  kernels ~0.2-0.33 s each): a precompiled sim library with explicit instantiations would
  take that out of every kernel, at the price of kernels that are no longer self-contained.
"""


def _changes_table() -> str:
    lines = ["| measurement | before | after | what the profile showed → change |",
             "|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in CHANGES]
    return "\n".join(lines)


NOTES = _NOTES.replace("{changes}", _changes_table())
