"""What Python source writes, read from a call's code argument or from a shell command
running Python inline: a notebook agent saving a data frame into a read-only folder
writes there as surely as ``sed -i`` would."""

from __future__ import annotations

import json

import pytest

from features.calls.tool_view import parsed_view


@pytest.mark.parametrize(
    ("tool", "arguments", "writes"),
    [
        ("python", {"code": "d.to_csv('data/raw/a.csv', index=False)"}, ("data/raw/a.csv",)),
        ("python", {"code": 'pl_df.write_parquet("out/b.parquet")'}, ("out/b.parquet",)),
        ("python", {"code": "np.save('arr.npy', x)"}, ("arr.npy",)),
        ("python", {"code": "os.remove('data/raw/a.csv')"}, ("data/raw/a.csv",)),
        ("python", {"code": "shutil.rmtree('build')"}, ("build",)),
        (
            "mcp__jupyter__insert_execute_code_cell",
            {"cell_index": 9, "cell_source": "d.to_parquet('data/raw/m.parquet')"},
            ("data/raw/m.parquet",),
        ),
        (
            "shell",
            {"command": ["bash", "-lc", "python - <<'EOF'\nd.to_csv('data/raw/x.csv')\nEOF"]},
            ("data/raw/x.csv",),
        ),
        ("python", {"code": "d = pd.read_csv('data/raw/a.csv'); d.shape"}, ()),
        ("shell", {"command": "grep -n to_csv('x.csv') notes.md"}, ()),
    ],
)
def test_writes_in_python_source(
    tool: str, arguments: dict[str, object], writes: tuple[str, ...]
) -> None:
    assert parsed_view(tool, json.dumps(arguments)).writes == writes
