"""`pypto TOOL --help` explains the tool: its description and every option with its help,
for every subcommand; `pypto --help` lists the tools."""

from __future__ import annotations

import argparse

import pytest

from pypto.tools.cli import TOOLS, main, tool_parser


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    assert exit_info.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_every_subcommands_help_lists_each_of_its_options_with_its_help(tool, capsys):
    text = _help(capsys, tool, "--help")
    assert text.startswith(f"usage: pypto {tool} ")
    parser, module = tool_parser(tool)
    assert module.__doc__.strip().splitlines()[0] in text  # what the tool is for
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        assert action.help, f"pypto {tool}: {action.dest} has no help text"
        for name in action.option_strings or [action.dest]:
            assert name in text, f"pypto {tool} --help does not show {name}"


def test_the_tools_take_options_where_they_have_them(capsys):
    for tool in ("triage", "dump-viewer", "deps-viewer", "operators-doc", "bench"):
        assert "--" in _help(capsys, tool, "-h").split("options:")[1].replace("--help", "")


def test_pypto_help_lists_every_tool(capsys):
    text = _help(capsys, "--help")
    assert all(f"    {tool}" in text for tool in TOOLS)
    assert "`pypto TOOL --help` lists a tool's options" in text


def test_pypto_without_a_tool_prints_the_tools_and_exits_2(capsys):
    assert main([]) == 2
    out = capsys.readouterr().out
    assert all(f"    {tool}" in out for tool in TOOLS)


def test_an_unknown_tool_is_a_usage_error_naming_the_tools(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["triag"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'triag'" in capsys.readouterr().err
