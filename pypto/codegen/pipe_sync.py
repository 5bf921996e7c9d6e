"""Pipe synchronisation of device kernels: the InsertPipeSync pass and its verifier.

An AI Core issues instructions in program order to independent pipes (MTE2 loads, V vector
work, MTE3 stores; MTE1, M and FIX on the cube) that each execute in order but run
concurrently with each other.  Two instructions on different pipes that touch the same
bytes (one of them writing) must be ordered by a flag: `set_flag(A, B, e)` issued on pipe A
fires once every earlier A instruction is done; `wait_flag(A, B, e)` holds pipe B until it
fires.  pto-isa's CPU model executes everything synchronously and ignores the flags, so the
verifier here is the only guard of them.

Kernels are modelled as `Instr` leaves and `Loop` nodes.  `insert_pipe_sync` adds a flag pair
for every uncovered dependency (set after the producer, wait before the consumer, in their
innermost common block; a dependency carried around a loop gets its pair at the end of the
loop body), allocates event ids (at most `EVENTS` per pipe pair live at once), then drops
every pair the verifier proves redundant, so each remaining pair guards a dependency no
other ordering covers.  `verify_pipe_sync` checks a synchronised body independently:
happens-before over traces of the body (each loop run twice, and loops that may run zero
times skipped), every cross-pipe dependency ordered, every wait matched by an earlier set,
no flag set twice before its wait, none left set at the end.

An operator of the cross-core pipe (TPUSH / TPOP / TFREE) is a `fence` instruction:
device code puts `pipe_barrier(PIPE_ALL)` before and after it, so it is ordered after
everything issued before it and before everything issued after it (on A2/A3 a push or pop
is a store or load on a pipe of its own, on A5 the peer core writes the slot; either way
the barriers order it whatever it does inside).  A flag may stay set across it.

A run-time `if` is a `Branch` node.  One that issues pipe work is a fence: device code puts
`pipe_barrier(PIPE_ALL)` before the `if` and after its join, so everything issued before
the `if` is done before either branch starts and everything a branch issued is done before
anything after the join starts, whichever branch ran and however often an enclosing loop
runs the `if`.  Each branch is then synchronised on its own as a whole body (no flag left
set at its end), and outside it the `Branch` is one event ordered after everything before
it and before everything after it.  The verifier checks each branch body the same way,
and refuses a flag still set when a fence is reached (the branch's own pairs could reuse
its event id).  A `Branch` with no pipe work (scalar code only) is no fence: it touches no
on-chip byte and no tensor, so it needs no ordering.  A fenced `if` nested in a fenced
branch's body, with only scalar code between it and the start (end) of that body, emits no
barrier before it (after its join): the enclosing barrier orders the same instructions
(`template_models`); the verifier's model keeps both fences, which the emitted code still
has in effect.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..ir.errors import InternalError

EVENTS = 8
"""Event ids per (source pipe, destination pipe): EVENT_ID0 .. EVENT_ID7."""


@dataclass(frozen=True)
class Access:
    """Bytes [start, end) of an on-chip buffer, or a whole global tensor (space "GM:<name>")."""

    space: str
    start: int = 0
    end: int = 0

    def overlaps(self, other: Access) -> bool:
        if self.space != other.space:
            return False
        if self.space.startswith("GM:"):
            return True  # windows of one tensor count as overlapping: nothing proves them apart
        return self.start < other.end and other.start < self.end


@dataclass(eq=False)
class Instr:
    """One instruction: the pipe it runs on, what it reads and writes, how to name it.
    A `fence` instruction (an operator of the cross-core pipe, which device code emits
    between two `pipe_barrier(PIPE_ALL)`) is ordered after everything before it and before
    everything after it."""

    pipe: str
    reads: tuple[Access, ...]
    writes: tuple[Access, ...]
    name: str
    payload: object = None  # the code generator's model of the instruction
    fence: bool = False


@dataclass(eq=False)
class Loop:
    """A loop over `body`; `trips` is its trip count when known at compile time."""

    body: list[Node]
    trips: int | None = None
    payload: object = None


@dataclass(eq=False)
class Flag:
    """`set_flag` (op "set") or `wait_flag` (op "wait") of pipe pair (src, dst), event id.
    The two halves of one pair share `pair`; `guards` names the dependency it was made for."""

    op: str
    src: str
    dst: str
    event: int
    pair: int
    guards: tuple[Instr, Instr] | None = None


@dataclass(eq=False)
class Branch:
    """A run-time `if`: `then_body`, else `else_body`; `fence` (work on some pipe inside) says
    whether it is fenced by `pipe_barrier(PIPE_ALL)` before it and after its join (see the
    module docstring)."""

    then_body: list[Node]
    else_body: list[Node]
    payload: object = None

    @property
    def fence(self) -> bool:
        return _issues_pipe_work(self.then_body) or _issues_pipe_work(self.else_body)


def _issues_pipe_work(body: list[Node]) -> bool:
    for node in body:
        if isinstance(node, Loop) and _issues_pipe_work(node.body):
            return True
        if isinstance(node, Branch) and node.fence:
            return True
        if isinstance(node, Instr) and node.pipe:
            return True
    return False


Node = Instr | Loop | Branch | Flag


@dataclass(frozen=True)
class Violation:
    """What the verifier found wrong: an unordered dependency (producer, consumer) or a
    misused flag."""

    message: str
    producer: Instr | None = None
    consumer: Instr | None = None


# ----------------------------------------------------------------------------- traces


@dataclass(frozen=True)
class _Event:
    node: Instr | Flag | Branch
    path: tuple[int, ...]  # iteration numbers of the enclosing loops (tells instances apart)


def _traces(body: list[Node]) -> list[list[_Event]]:
    """Linear executions of `body`: every loop twice (once when it runs once), and, when some
    loop may run zero times, the execution that skips each such loop."""
    full = list(_unroll(body, (), skip_optional=False))
    traces = [full]
    if _has_optional(body):
        traces.append(list(_unroll(body, (), skip_optional=True)))
    return traces


def _has_optional(body: list[Node]) -> bool:
    return any(isinstance(n, Loop) and (n.trips is None or n.trips == 0 or _has_optional(n.body))
               for n in body)


def _unroll(body: list[Node], path: tuple[int, ...], skip_optional: bool):
    for node in body:
        if isinstance(node, Loop):
            count = 2 if node.trips is None else min(node.trips, 2)
            if skip_optional and node.trips is None:
                count = 0
            for i in range(count):
                yield from _unroll(node.body, path + (i,), skip_optional)
        else:
            yield _Event(node, path)


def _event_pipe(node: Instr | Flag | Branch) -> str:
    if isinstance(node, Instr):
        return node.pipe
    if isinstance(node, Branch):
        return ""  # a fence is every pipe's (see _happens_before); else scalar code
    return node.src if node.op == "set" else node.dst


def _conflicts(p: Instr, c: Instr) -> bool:
    return any(w.overlaps(a) for w in p.writes for a in (*c.reads, *c.writes)) or \
        any(r.overlaps(w) for r in p.reads for w in c.writes)


def _dependencies(trace: list[_Event]) -> list[tuple[int, int]]:
    """(producer, consumer) positions in `trace` of every instruction pair on different pipes
    whose accesses conflict, keeping per consumer and pipe only the latest producer (an
    earlier one on the same pipe is ordered before it anyway)."""
    instrs = [(i, e.node) for i, e in enumerate(trace) if isinstance(e.node, Instr)]
    deps = []
    for k, (ci, c) in enumerate(instrs):
        seen: set[str] = {c.pipe}
        for pi, p in reversed(instrs[:k]):
            if p.pipe in seen:
                continue
            if _conflicts(p, c):
                deps.append((pi, ci))
                seen.add(p.pipe)
    return deps


def _happens_before(trace: list[_Event], event_limit: bool = True
                    ) -> tuple[list[int], list[Violation]]:
    """Per event, a bitmask of the events ordered before it (same pipe in program order,
    a set before the wait that consumes it, everything before a fenced branch before it and
    it before everything after it, transitively), and the flag misuses."""
    hb: list[int] = []
    last_on_pipe: dict[str, int] = {}
    pending: dict[tuple[str, str, int], int] = {}  # flag -> position of its unconsumed set
    problems: list[Violation] = []
    fence: int | None = None  # position of the latest fenced Branch
    for i, event in enumerate(trace):
        node = event.node
        pipe = _event_pipe(node)
        ordered = [j for j in (last_on_pipe.get(pipe), fence) if j is not None]
        if isinstance(node, Instr) and node.fence:
            ordered += last_on_pipe.values()  # between pipe_barrier(PIPE_ALL)s
            fence = i
        if isinstance(node, Branch) and node.fence:
            ordered += last_on_pipe.values()  # pipe_barrier(PIPE_ALL): every pipe drained
            fence = i
            problems += [Violation(
                f"{_flag_text(Flag('set', *key, -1))} is still set at a run-time `if`, whose "
                "branches are synchronised on their own and may reuse its event")
                for key in pending]
        if isinstance(node, Flag):
            ordered += _flag_event(node, i, pending, problems, event_limit)
        before = 0
        for j in ordered:
            before |= hb[j] | (1 << j)
        hb.append(before)
        last_on_pipe[pipe] = i
    for j in sorted(pending.values()):
        problems.append(Violation(f"{_flag_text(trace[j].node)} is never waited for: the flag "
                                  "stays set after the kernel"))
    return hb, problems


def _flag_event(node: Flag, i: int, pending: dict, problems: list[Violation],
                event_limit: bool) -> list[int]:
    """Records the set or wait `node` at position `i` in `pending` (and its misuses in
    `problems`); returns the position of the set a wait consumes (ordered before it)."""
    key = (node.src, node.dst, node.event)
    if event_limit and not 0 <= node.event < EVENTS:
        problems.append(Violation(f"{_flag_text(node)} uses an event id outside "
                                  f"0..{EVENTS - 1}"))
    if node.op == "set":
        if key in pending:
            problems.append(Violation(
                f"{_flag_text(node)} is set again before its wait_flag: the first "
                "signal is lost"))
        pending[key] = i
        return []
    j = pending.pop(key, None)
    if j is None:
        problems.append(Violation(
            f"{_flag_text(node)} waits for a flag no earlier set_flag raised: "
            "the pipe would stall forever"))
        return []
    return [j]


def _flag_text(flag: Flag) -> str:
    verb = "set_flag" if flag.op == "set" else "wait_flag"
    return f"{verb}({flag.src}, {flag.dst}, EVENT_ID{flag.event})"


def _unordered(trace: list[_Event], deps, hb) -> list[tuple[Instr, Instr]]:
    return [(trace[p].node, trace[c].node) for p, c in deps if not (hb[c] >> p) & 1]


def verify_pipe_sync(body: list[Node], event_limit: bool = True) -> list[Violation]:
    """Everything wrong with the flags of `body` (empty: every cross-pipe dependency is
    ordered and every flag is used correctly), its branches' bodies checked each on its own
    (see the module docstring).  An unordered dependency names its producer and consumer.
    `event_limit=False` accepts event ids past the hardware's (InsertPipeSync gives each
    pair its own until it allocates them)."""
    found: list[Violation] = []
    for branch in _branches(body):
        for block in (branch.then_body, branch.else_body):
            found += [v for v in verify_pipe_sync(block, event_limit)
                      if v.message not in {f.message for f in found}]
    seen: set[tuple[int, int]] = set()
    for trace in _traces(body):
        hb, problems = _happens_before(trace, event_limit)
        found += [v for v in problems if v.message not in {f.message for f in found}]
        for p, c in _unordered(trace, _dependencies(trace), hb):
            if (id(p), id(c)) in seen:
                continue
            seen.add((id(p), id(c)))
            shared = next(a for a in (*p.writes, *p.reads)
                          if any(a.overlaps(b) for b in (*c.reads, *c.writes)))
            found.append(Violation(
                f"{p.name} on {p.pipe} and {c.name} on {c.pipe} both touch "
                f"{_access_text(shared)}, and no set_flag/wait_flag orders them", p, c))
    return found


def _branches(body: list[Node]):
    """The outermost branches of `body` (those inside loops too, not those inside them)."""
    for node in body:
        if isinstance(node, Branch):
            yield node
        elif isinstance(node, Loop):
            yield from _branches(node.body)


def _access_text(a: Access) -> str:
    if a.space.startswith("GM:"):
        return f"global tensor `{a.space[3:]}`"
    return f"{a.space} bytes [{a.start:#x}, {a.end:#x})"


# ----------------------------------------------------------------------------- insertion


def _locate(body: list[Node], target: Instr) -> list[tuple[list[Node], int]]:
    """The chain of (block, index) from `body` down to `target`."""
    for i, node in enumerate(body):
        if node is target:
            return [(body, i)]
        if isinstance(node, Loop):
            inner = _locate(node.body, target)
            if inner:
                return [(body, i), *inner]
    return []


def _place(body: list[Node], producer: Instr, consumer: Instr, pair: int) -> None:
    """Inserts the set/wait pair of the dependency producer -> consumer (see the module
    docstring), with a provisional event id of its own."""
    p_chain, c_chain = _locate(body, producer), _locate(body, consumer)
    depth = 0
    # Equal indices at one depth name the same loop: both lie deeper.
    while depth + 1 < min(len(p_chain), len(c_chain)) and p_chain[depth][1] == c_chain[depth][1]:
        depth += 1
    block, p_index = p_chain[depth]
    _, c_index = c_chain[depth]
    # Until events are allocated each pair has an id of its own: the pairs never alias.
    event = EVENTS + pair
    set_flag = Flag("set", producer.pipe, consumer.pipe, event, pair, (producer, consumer))
    wait_flag = Flag("wait", producer.pipe, consumer.pipe, event, pair, (producer, consumer))
    if p_index < c_index:
        block.insert(c_index, wait_flag)
        block.insert(p_index + 1, set_flag)
    else:  # carried around the loop whose body `block` is: both at the body's end
        block.extend([set_flag, wait_flag])


def _flags(body: list[Node], deep: bool = False) -> list[Flag]:
    """The flags of `body` outside its branches (`deep`: those inside them too)."""
    out = []
    for node in body:
        if isinstance(node, Loop):
            out += _flags(node.body, deep)
        elif isinstance(node, Branch) and deep:
            out += _flags(node.then_body, deep) + _flags(node.else_body, deep)
        elif isinstance(node, Flag):
            out.append(node)
    return out


def _remove_pair(body: list[Node], pair: int) -> list[Node]:
    """A copy of `body` without the flags of `pair` (loops copied, leaves shared)."""
    out: list[Node] = []
    for node in body:
        if isinstance(node, Loop):
            out.append(Loop(_remove_pair(node.body, pair), node.trips, node.payload))
        elif isinstance(node, Branch):
            out.append(Branch(_remove_pair(node.then_body, pair),
                              _remove_pair(node.else_body, pair), node.payload))
        elif not (isinstance(node, Flag) and node.pair == pair):
            out.append(node)
    return out


def _ordered_positions(body: list[Node], start: int = 0) -> tuple[dict[int, int], int]:
    """Pre-order position of every flag (by id) in `body`."""
    pos: dict[int, int] = {}
    n = start
    for node in body:
        if isinstance(node, Loop):
            inner, n = _ordered_positions(node.body, n + 1)
            pos.update(inner)
        else:
            if isinstance(node, Flag):
                pos[id(node)] = n
            n += 1
    return pos, n


def _allocate_events(body: list[Node]) -> None:
    """Gives each pair the lowest event id free over its set..wait span among the pairs of
    the same pipe pair (spans nest with the blocks, so pre-order spans suffice).  A pair
    that finds none is moved to just before its wait (its span shrinks to nothing)."""
    while True:
        pos, _ = _ordered_positions(body)
        spans: dict[int, list[Flag]] = {}
        for flag in _flags(body):
            spans.setdefault(flag.pair, []).append(flag)
        busy: dict[tuple[str, str], list[tuple[int, int, int]]] = {}
        stuck = None
        for first, second in sorted(spans.values(), key=lambda flags: pos[id(flags[0])]):
            lo, hi = pos[id(first)], pos[id(second)]
            taken = {e for a, b, e in busy.get((first.src, first.dst), []) if a <= hi and lo <= b}
            free = next((e for e in range(EVENTS) if e not in taken), None)
            if free is None:
                stuck = (first, second)
                break
            first.event = second.event = free
            busy.setdefault((first.src, first.dst), []).append((lo, hi, free))
        if stuck is None:
            return
        _shrink(body, *stuck)


def _shrink(body: list[Node], set_flag: Flag, wait_flag: Flag) -> None:
    """Moves `set_flag` to just before `wait_flag` (still after its producer)."""
    for block in _blocks(body):
        if any(n is set_flag for n in block):
            block.remove(set_flag)
            block.insert(next(i for i, n in enumerate(block) if n is wait_flag), set_flag)
            return


def _blocks(body: list[Node]):
    yield body
    for node in body:
        if isinstance(node, Loop):
            yield from _blocks(node.body)


def without_nodes(nodes: list[Node], dropped: set[int]) -> list[Node]:
    """`nodes` (and their loops' and branches' bodies) without the statements whose ids are
    `dropped`."""
    kept = []
    for node in nodes:
        if isinstance(node, Loop):
            node.body = without_nodes(node.body, dropped)
        elif isinstance(node, Branch):
            node.then_body = without_nodes(node.then_body, dropped)
            node.else_body = without_nodes(node.else_body, dropped)
        elif id(node) in dropped:
            continue
        kept.append(node)
    return kept


def template_models(nodes, fenced: bool = False) -> list[dict]:
    """The device template's statement models of a synchronised body: each instruction's
    payload, each loop's with the models of its body, each flag as `set_flag` /
    `wait_flag` of its pipe pair and event, each fenced branch with its two barriers
    (`fence_before`, `fence_after`).  In a fenced branch's body (`fenced`) a nested fenced
    `if` leaves out its barrier before it when nothing before it in the body is pipe work
    or a flag, and the one after its join when nothing after it is: the enclosing `if`'s
    barriers, with only scalar code between, order the same instructions."""
    out = []
    for i, node in enumerate(nodes):
        if isinstance(node, Loop):
            out.append({**node.payload, "body": template_models(node.body)})
        elif isinstance(node, Branch):
            fence = node.fence
            out.append({**node.payload,
                        "fence_before": fence and not (fenced and _scalar_only(nodes[:i])),
                        "fence_after": fence and not (fenced and _scalar_only(nodes[i + 1:])),
                        "then_body": template_models(node.then_body, fence),
                        "else_body": template_models(node.else_body, fence)})
        elif isinstance(node, Flag):
            out.append({"kind": "flag", "op": "set_flag" if node.op == "set" else "wait_flag",
                        "src": node.src, "dst": node.dst, "event": node.event})
        else:
            out.append(node.payload)
    return out


def _scalar_only(nodes: list[Node]) -> bool:
    """Do `nodes` hold neither pipe work nor a flag (scalar statements alone)?"""
    return not _issues_pipe_work(nodes) and not _flags(nodes, deep=True)


def insert_pipe_sync(body: list[Node], counter=None) -> list[Node]:
    """`body` with the flag pairs its cross-pipe dependencies need (see the module
    docstring), each branch's body synchronised on its own first (pairs numbered by one
    `counter` over the whole body).  Raises InternalError when the verifier still finds a
    problem afterwards."""
    counter = counter if counter is not None else itertools.count()
    body = _synchronised_branches(body, counter)  # also a private copy of the loops
    while True:
        problems = verify_pipe_sync(body, event_limit=False)
        if not problems:
            break
        if problems[0].producer is None:
            raise InternalError(f"pipe synchronisation: {problems[0].message}")
        _place(body, problems[0].producer, problems[0].consumer, next(counter))
    body = _without_redundant_pairs(body)
    _allocate_events(body)
    # Allocation may move a set later (closer to its wait), which can make another pair
    # redundant; dropping a pair frees its event, so the ids stay valid.
    body = _without_redundant_pairs(body)
    problems = verify_pipe_sync(body)
    if problems:
        raise InternalError(
            "pipe synchronisation failed: " + "; ".join(v.message for v in problems))
    # What each pair guards: the first dependency left unordered without it.
    for pair in {f.pair for f in _flags(body)}:
        unordered = next(v for v in verify_pipe_sync(_remove_pair(body, pair)) if v.producer)
        for flag in _flags(body):
            if flag.pair == pair:
                flag.guards = (unordered.producer, unordered.consumer)
    return body


def _synchronised_branches(body: list[Node], counter) -> list[Node]:
    """A copy of `body` (its loops copied, leaves shared) with each branch's bodies
    synchronised by `insert_pipe_sync`."""
    out: list[Node] = []
    for node in body:
        if isinstance(node, Loop):
            out.append(Loop(_synchronised_branches(node.body, counter), node.trips,
                            node.payload))
        elif isinstance(node, Branch):
            out.append(Branch(insert_pipe_sync(node.then_body, counter),
                              insert_pipe_sync(node.else_body, counter), node.payload))
        else:
            out.append(node)
    return out


def _without_redundant_pairs(body: list[Node]) -> list[Node]:
    """`body` without every pair the other pairs make redundant, latest pair first."""
    for pair in sorted({f.pair for f in _flags(body)}, reverse=True):
        trial = _remove_pair(body, pair)
        if not verify_pipe_sync(trial, event_limit=False):
            body = trial
    return body


def flag_pairs(body: list[Node]) -> list[int]:
    """The pair numbers of the flags in `body` (its branches' too), in program order."""
    return list(dict.fromkeys(f.pair for f in _flags(body, deep=True)))


def without_pair(body: list[Node], pair: int) -> list[Node]:
    """`body` with both flags of `pair` removed (the mutation the verifier must catch)."""
    return _remove_pair(body, pair)


def pair_flags(body: list[Node], pair: int) -> tuple[Flag, Flag]:
    """The set_flag and wait_flag of `pair`."""
    first, second = (f for f in _flags(body, deep=True) if f.pair == pair)
    return first, second
