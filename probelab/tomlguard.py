"""A linear pre-scan that bounds a TOML file's structure before tomllib sees it.

tomllib recurses once per nesting level (100k nested arrays: RecursionError) and its cost
grows with the square of a dotted key's length (one key of 40k parts: minutes and GBs).
Hypothesis files need neither, so this scan refuses them in one pass over the text,
tracking strings and comments so that quoted text never counts.
"""

MAX_NESTING = 16  # [ and { open at once, table headers included
MAX_DOTS_PER_LINE = 16  # dotted-key separators (and float points) outside strings
MAX_ASSIGNMENTS = 4096  # `=` outside strings: keys in the whole file


def structure_problem(text: str) -> str | None:
    """Why `text` is refused before parsing, or None. Only counts; never parses."""
    depth = dots = assignments = 0
    line, i, n = 1, 0, len(text)
    while i < n:
        char = text[i]
        if char in "\"'":
            quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else char
            i = _string_end(text, i + len(quote), quote)
            continue
        if char == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if char == "\n":
            line, dots = line + 1, 0
        elif char in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return f"line {line}: brackets nest deeper than {MAX_NESTING}"
        elif char in "]}":
            depth = max(depth - 1, 0)
        elif char == ".":
            dots += 1
            if dots > MAX_DOTS_PER_LINE:
                return f"line {line}: more than {MAX_DOTS_PER_LINE} dotted-key parts"
        elif char == "=":
            assignments += 1
            if assignments > MAX_ASSIGNMENTS:
                return f"more than {MAX_ASSIGNMENTS} keys"
        i += 1
    return None


def _string_end(text: str, i: int, quote: str) -> int:
    """The index just past the string that opened before `i` with `quote` (or the end of the
    text for an unterminated one: tomllib then reports it)."""
    escapes = quote[0] == '"'
    while i < len(text):
        if escapes and text[i] == "\\":
            i += 2
            continue
        if text.startswith(quote, i):
            end = i + len(quote)
            if len(quote) == 3:  # up to two more quotes are content: '"""a""""' ends last
                while end < min(i + 5, len(text)) and text[end] == quote[0]:
                    end += 1
            return end
        if len(quote) == 1 and text[i] == "\n":
            return i  # a one-line string ends at the line at the latest
        i += 1
    return i
