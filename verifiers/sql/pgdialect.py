"""Writing a checked query for PostgreSQL: a gate for functions the server cannot interrupt, and
the rewrites that keep a SQLite query's meaning there.

The gate (every dialect). PostgreSQL enforces `statement_timeout` only where its code checks for
interrupts, and some functions loop without checking, in time that grows with the product of
their arguments' lengths (`btrim(x, chars)` and `translate` on strings a query can build up to
1 GB): one call would keep a server process busy for hours. So `TRIM` with characters runs as an
(interruptible) regular expression, `translate` and padded `format` are refused, and a function
sqlglot does not know passes only if it is on a short list of cheap ones (`_SAFE_FUNCTIONS`), as
the whole catalog is reachable by name otherwise.

The rewrites (replies read as SQLite). sqlglot translates the syntax; these fix what it leaves
meaning something else on PostgreSQL, using the loaded schema's names and types:
- identifiers are case-insensitive in SQLite even when quoted: each one is written as the name
  PostgreSQL stored, quoted; a double-quoted word that names no column is a string, as in SQLite
  (Spider's gold queries write `name = "Bob"`);
- LIKE ignores ASCII case and has no escape character: ILIKE ... ESCAPE '' on text;
- dates are text in SQLite: DATE columns are read as text, and `date()`, `datetime()`, `time()`,
  `julianday()` with their common modifiers become PostgreSQL date arithmetic;
- CAST(x AS INTEGER) truncates (PostgreSQL rounds) and is 64-bit; SUM of integers is an integer
  (so `SUM(x) / COUNT(x)` divides integers); `total()` is a float sum; a TEXT column compared with
  a number compares text; a number is a condition (`WHERE 1`); LIMIT -1 means no limit;
- ROUND works on floats and rounds halves away from zero; a negative substr() start counts from
  the end; a one-field strftime() in arithmetic is an integer;
- a grouped query may select columns it does not group by (MIN of them, unless MIN or MAX is
  in the query, where SQLite takes them from the extreme row); a derived table may go unnamed;
  GLOB with a literal pattern becomes a regular expression; COLLATE NOCASE/BINARY name the
  collations the backend creates in each schema.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from sqlglot import exp

from rlvr.verifiers.sql.errors import QueryRefused
from rlvr.verifiers.sql.guard import CheckedQuery, function_name

# Functions sqlglot does not model that may run on PostgreSQL: cheap (linear, or interruptible)
# and without effects on the session. Anything else unknown to sqlglot is refused there.
_SAFE_FUNCTIONS = frozenset({
    "age", "make_date", "make_time", "make_timestamp", "make_interval", "justify_days",
    "justify_hours", "justify_interval", "date_part", "date_trunc", "to_date", "to_timestamp",
    "to_number", "clock_timestamp", "statement_timestamp", "transaction_timestamp", "isfinite",
    "gcd", "lcm", "div", "trunc", "cbrt", "degrees", "radians", "pi", "width_bucket",
    "num_nonnulls", "num_nulls", "scale", "octet_length", "bit_length", "char_length",
    "initcap", "split_part", "starts_with", "to_hex", "md5", "chr", "ascii",
    "regexp_match", "regexp_matches", "regexp_split_to_array", "regexp_split_to_table",
    "json_build_object", "jsonb_build_object", "json_agg", "jsonb_agg", "to_json", "to_jsonb",
    "row_to_json", "json_extract_path_text", "jsonb_extract_path_text", "json_array_length",
    "jsonb_array_length", "json_typeof", "jsonb_typeof", "cardinality", "every",
    "to_char", "regexp_replace",
})  # fmt: skip
_MAX_TRIM_CHARS = 64
_PADDED_FORMAT = re.compile(r"%(?!%)[^a-zA-Z%]*[-*0-9]")
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.In, exp.Between)
_TIMESTAMP = exp.DataType.build("TIMESTAMP")
_TEXT = exp.DataType.build("TEXT")
_INTEGER_FIELDS = {"%Y", "%m", "%d", "%H", "%M", "%S", "%j", "%w", "%W", "%s"}
_DATE_FORMAT, _DATETIME_FORMAT, _TIME_FORMAT = "YYYY-MM-DD", "YYYY-MM-DD HH24:MI:SS", "HH24:MI:SS"
_MODIFIER = re.compile(
    r"\s*([+-]?\d+(?:\.\d+)?)\s+(day|hour|minute|second|month|year)s?\s*"
    r"|\s*(start of (?:day|month|year))\s*",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SchemaNames:
    """Names and types as PostgreSQL stored a loaded schema."""

    tables: dict[str, str] = field(default_factory=dict)
    """lower-case name -> the stored name"""
    columns: dict[str, str] = field(default_factory=dict)
    date_columns: frozenset[str] = frozenset()
    """lower-case names that are DATE in every table that has them"""
    text_columns: frozenset[str] = frozenset()
    """lower-case names that are TEXT in every table that has them"""
    integer_columns: frozenset[str] = frozenset()
    """lower-case names that are integers in every table that has them"""

    @classmethod
    def from_catalog(cls, rows: list[tuple[str, str, str]]) -> SchemaNames:
        """From (table, column, data_type) rows of information_schema.columns."""
        tables = {table.lower(): table for table, _, _ in rows}
        columns = {column.lower(): column for _, column, _ in rows}
        kinds: dict[str, set[str]] = {}
        for _, column, data_type in rows:
            kinds.setdefault(column.lower(), set()).add(data_type)
        dates = frozenset(name for name, types in kinds.items() if types == {"date"})
        texts = frozenset(name for name, types in kinds.items() if types == {"text"})
        integers = frozenset(
            name for name, types in kinds.items() if types <= {"bigint", "integer", "smallint"}
        )
        return cls(tables, columns, dates, texts, integers)

    @cached_property
    def key(self) -> str:
        return repr((sorted(self.tables.items()), sorted(self.columns.items()),
                     sorted(self.date_columns), sorted(self.text_columns),
                     sorted(self.integer_columns)))  # fmt: skip


def write_postgres(query: CheckedQuery, names: SchemaNames) -> str:
    """The query in PostgreSQL's dialect for a schema with these names (cached on the query)."""
    key = f"postgres|{names.key}"
    if key not in query._written:
        try:
            query._written[key] = _translate(query, names)
        except QueryRefused:
            raise
        except RecursionError:  # the rewrites and sqlglot recurse: a deep tree is the query's
            raise QueryRefused(
                "the query is nested too deeply to translate to PostgreSQL"
            ) from None
        except Exception as exc:  # sqlglot or a rewrite failing on an odd tree: the query's problem
            raise QueryRefused(f"cannot translate the query to PostgreSQL: {exc}") from None
    return query._written[key]


def _translate(query: CheckedQuery, names: SchemaNames) -> str:
    tree: exp.Expr = query.expression.copy()
    if query.dialect == "sqlite":
        tree = _as_sqlite_means(tree, names, query.text)
    return _gate(tree).sql(dialect="postgres")


# --- the gate -------------------------------------------------------------------------------------


def _gate(tree: exp.Expr) -> exp.Expr:
    for node in list(tree.walk()):
        if isinstance(node, exp.Anonymous) and function_name(node) not in _SAFE_FUNCTIONS:
            raise QueryRefused(
                f"the function {function_name(node)}() is not available on the PostgreSQL backend"
            )
        if isinstance(node, exp.Translate):
            raise QueryRefused("translate() is not available on the PostgreSQL backend")
        if isinstance(node, exp.Format):
            template = node.this
            if not (isinstance(template, exp.Literal) and template.is_string) or (
                _PADDED_FORMAT.search(template.this)
            ):
                raise QueryRefused("format() with a computed or padded template is not allowed")
        if isinstance(node, exp.Trim) and node.args.get("expression") is not None:
            node.replace(_trim_as_regexp(node))
    return tree


def _trim_as_regexp(node: exp.Trim) -> exp.Expr:
    """TRIM(x, chars) as regexp_replace: the same result, and interruptible."""
    chars = node.args["expression"]
    literal = isinstance(chars, exp.Literal) and chars.is_string
    if not literal or len(chars.this) > _MAX_TRIM_CHARS:
        raise QueryRefused(
            f"TRIM with characters to remove needs them as a literal of at most {_MAX_TRIM_CHARS} "
            "characters on the PostgreSQL backend"
        )
    if not chars.this:
        return node.this
    klass = "[" + "".join("\\" + c if c in "]\\^-[" else c for c in chars.this) + "]+"
    position = str(node.args.get("position") or "BOTH").upper()
    pattern = {"LEADING": f"^{klass}", "TRAILING": f"{klass}$"}.get(position, f"^{klass}|{klass}$")
    return exp.Anonymous(
        this="REGEXP_REPLACE",
        expressions=[node.this, exp.Literal.string(pattern), exp.Literal.string(""),
                     exp.Literal.string("g")],
    )  # fmt: skip


# --- SQLite's meaning -----------------------------------------------------------------------------


def _as_sqlite_means(tree: exp.Expr, names: SchemaNames, text: str) -> exp.Expr:
    aliases = _output_names(tree)
    for column in list(tree.find_all(exp.Column)):
        _double_quoted_string(column, names, aliases, text)
    for table in tree.find_all(exp.Table):
        if table.args.get("db") is not None and table.db.lower() == "main":
            table.set("db", None)  # SQLite's name for the database itself
    for identifier in tree.find_all(exp.Identifier):
        _spell_as_stored(identifier, names)
    for column in list(tree.find_all(exp.Column)):
        name = column.name.lower()
        if name in names.date_columns and name not in aliases and not _orders_a_set(column):
            column.replace(exp.Cast(this=column.copy(), to=_TEXT.copy()))
    for comparison in list(tree.find_all(*_COMPARISONS)):
        _compare_as_text(comparison, names, aliases)
    for total in list(tree.find_all(exp.Sum)):
        _integer_sum(total, names, aliases)
    for select in list(tree.find_all(exp.Select)):
        _bare_columns_as_min(select, aliases)
    for condition in list(tree.find_all(exp.Where, exp.Having)):
        _numbers_as_conditions(condition.this, names, aliases)
    # Children first, so that a rewritten node is built from rewritten children.
    for node in reversed(list(tree.walk(bfs=False))):
        replacement = _rewrite(node)
        if replacement is not None and replacement is not node:
            if node is tree:
                return replacement
            node.replace(replacement)
    return tree


def _compare_as_text(node: exp.Expr, names: SchemaNames, aliases: set[str]) -> None:
    """`year = 2014` on a TEXT column compares text in SQLite (the literal takes the column's
    affinity), and fails on PostgreSQL: write the number as text, as SQLite reads it."""
    operands = [node.this, *(node.expressions if isinstance(node, exp.In) else [])]
    if isinstance(node, exp.Between):
        operands += [node.args.get("low"), node.args.get("high")]
    elif not isinstance(node, exp.In):
        operands.append(node.expression)
    if not any(_is_text_column(operand, names, aliases) for operand in operands):
        return
    for operand in operands:
        if isinstance(operand, exp.Literal) and not operand.is_string:
            operand.replace(exp.Literal.string(operand.this))
        elif isinstance(operand, exp.Neg) and isinstance(operand.this, exp.Literal):
            operand.replace(exp.Literal.string("-" + operand.this.this))


def _bare_columns_as_min(select: exp.Select, aliases: set[str]) -> None:
    """SQLite lets a grouped query select a column it does not group by (Spider's gold does:
    `SELECT T2.name, count(*) ... GROUP BY T1.id`); PostgreSQL wants an aggregate. Such a column
    almost always depends on the grouped key, so MIN gives its value. Not done when MIN or MAX
    is in the query: SQLite then takes bare columns from the row holding the extreme value."""
    group = select.args.get("group")
    if group is None or any(
        node.parent_select is select for node in select.find_all(exp.Max, exp.Min)
    ):
        return
    grouped = {expression.sql() for expression in group.expressions}
    by_alias = {e.alias.lower(): e.this for e in select.expressions if isinstance(e, exp.Alias)}
    for expression in group.expressions:  # GROUP BY an output alias groups by its expression
        if isinstance(expression, exp.Column) and expression.name.lower() in by_alias:
            grouped.add(by_alias[expression.name.lower()].sql())
    for expression in group.expressions:
        if isinstance(expression, exp.Literal) and expression.this.isdigit():
            position = int(expression.this) - 1
            if 0 <= position < len(select.expressions):
                grouped.add(select.expressions[position].unalias().sql())
    candidates = [e.this if isinstance(e, exp.Alias) else e for e in select.expressions]
    order = select.args.get("order")
    if order is not None:
        candidates += [
            ordered.this
            for ordered in order.expressions
            if not (isinstance(ordered.this, exp.Column) and ordered.this.name.lower() in aliases)
            and not isinstance(ordered.this, exp.Literal)
        ]
    for node in candidates:
        columns = [c for c in node.find_all(exp.Column) if not isinstance(c.this, exp.Star)]
        if (
            columns
            and node.sql() not in grouped
            and not node.find(exp.AggFunc, exp.Window, exp.Subquery, exp.Select)
            and any(column.sql() not in grouped for column in columns)
        ):
            node.replace(exp.Min(this=node.copy()))


def _numbers_as_conditions(node: exp.Expr, names: SchemaNames, aliases: set[str]) -> None:
    """`WHERE 1`, `WHERE flag AND ...`: SQLite takes a number as true when it is not 0."""
    if isinstance(node, (exp.And, exp.Or)):
        _numbers_as_conditions(node.this, names, aliases)
        _numbers_as_conditions(node.expression, names, aliases)
    elif isinstance(node, (exp.Not, exp.Paren)):
        _numbers_as_conditions(node.this, names, aliases)
    elif isinstance(node, (exp.Literal, exp.Column)) and _is_integer(node, names, aliases):
        node.replace(exp.NEQ(this=node.copy(), expression=exp.Literal.number(0)))


def _integer_sum(node: exp.Sum, names: SchemaNames, aliases: set[str]) -> None:
    """SUM of integers is an integer in SQLite (so `SUM(x) / COUNT(x)` divides integers); on
    PostgreSQL SUM(bigint) is numeric."""
    if not _is_integer(node.this, names, aliases):
        return
    target = node.parent if isinstance(node.parent, exp.Window) else node
    target.replace(exp.Cast(this=target.copy(), to=exp.DataType.build("BIGINT")))


def _is_integer(node: exp.Expr | None, names: SchemaNames, aliases: set[str]) -> bool:
    if isinstance(node, exp.Column):
        return node.name.lower() in names.integer_columns and node.name.lower() not in aliases
    if isinstance(node, exp.Literal):
        return not node.is_string and re.fullmatch(r"\d+", node.this) is not None
    if isinstance(node, (exp.Paren, exp.Neg, exp.Abs)):
        return _is_integer(node.this, names, aliases)
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Mod)):
        return all(_is_integer(side, names, aliases) for side in (node.this, node.expression))
    if isinstance(node, exp.Case):
        branches = [branch.args.get("true") for branch in node.args.get("ifs") or ()]
        if node.args.get("default") is not None:
            branches.append(node.args["default"])
        return all(_is_integer(branch, names, aliases) for branch in branches)
    if isinstance(node, exp.If):
        options = [node.args.get("true"), node.args.get("false")]
        return all(o is None or _is_integer(o, names, aliases) for o in options)
    if isinstance(node, exp.Cast):
        return node.to.is_type(*exp.DataType.INTEGER_TYPES)
    return isinstance(node, (exp.Count, exp.Length))


def _is_text_column(node: exp.Expr | None, names: SchemaNames, aliases: set[str]) -> bool:
    return (
        isinstance(node, exp.Column)
        and node.name.lower() in names.text_columns
        and node.name.lower() not in aliases
    )


def _output_names(tree: exp.Expr) -> set[str]:
    """Lower-case names a query defines itself: column aliases, CTE and derived-table columns."""
    found = {alias.alias.lower() for alias in tree.find_all(exp.Alias) if alias.alias}
    for table_alias in tree.find_all(exp.TableAlias):
        found.update(column.name.lower() for column in table_alias.args.get("columns") or ())
    return found


def _double_quoted_string(
    column: exp.Column, names: SchemaNames, aliases: set[str], text: str
) -> None:
    identifier = column.this
    if column.table or not isinstance(identifier, exp.Identifier) or not identifier.quoted:
        return
    word = identifier.this
    if word.lower() in names.columns or word.lower() in aliases:
        return
    if '"' + word.replace('"', '""') + '"' in text:  # SQLite: a double-quoted non-column
        column.replace(exp.Literal.string(word))


def _spell_as_stored(identifier: exp.Identifier, names: SchemaNames) -> None:
    lower = identifier.this.lower()
    in_table = isinstance(identifier.parent, exp.Table) and identifier.arg_key == "this"
    first, second = (names.tables, names.columns) if in_table else (names.columns, names.tables)
    identifier.set("this", first.get(lower) or second.get(lower) or lower)
    identifier.set("quoted", True)


def _orders_a_set(column: exp.Column) -> bool:
    """In `a UNION b ORDER BY x`, x must stay an output column's bare name."""
    ordered = column.parent
    order = ordered.parent if isinstance(ordered, exp.Ordered) else None
    return order is not None and isinstance(order.parent, exp.SetOperation)


def _rewrite(node: exp.Expr) -> exp.Expr | None:
    if isinstance(node, exp.Like) and not isinstance(node.parent, exp.Escape):
        like = _ilike(node, exp.Literal.string(""))
        return exp.Not(this=like) if node.args.get("negate") else like
    if isinstance(node, exp.Escape) and isinstance(node.this, exp.Like):
        like = _ilike(node.this, node.expression)
        return exp.Not(this=like) if node.this.args.get("negate") else like
    if isinstance(node, exp.Glob):
        return _glob(node)
    if isinstance(node, exp.Cast) and node.to.is_type(*exp.DataType.INTEGER_TYPES):
        return _truncating_cast(node)
    if isinstance(node, exp.Anonymous):
        return _sqlite_function(node)
    if isinstance(node, exp.Round) and not _numeric_cast(node.this):
        # PostgreSQL has no ROUND(double, n), and rounds a double's halves to even
        node.set("this", exp.Cast(this=node.this.copy(), to=exp.DataType.build("NUMERIC")))
        return None
    if isinstance(node, exp.Substring) and _is_negative_literal(node.args.get("start")):
        # SQLite counts a negative start from the end; PostgreSQL from before the first character
        length = exp.Length(this=node.this.copy())
        start = exp.Add(this=length, expression=node.args["start"].copy())
        node.set("start", exp.Add(this=start, expression=exp.Literal.number(1)))
        return None
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)):
        _integer_strftime_operands(node)
    if isinstance(node, exp.Date) and not any(v for k, v in node.args.items() if k != "this"):
        # sqlglot parses a one-argument date() as DATE, a date type on PostgreSQL: SQLite's is text
        return _sqlite_function(exp.Anonymous(this="DATE", expressions=[node.this.copy()]))
    if isinstance(node, exp.Subquery) and not node.alias and _is_derived_table(node):
        node.set("alias", exp.TableAlias(this=exp.to_identifier(f"rlvr_t{id(node) % 10**6}")))
    if isinstance(node, exp.Limit) and isinstance(node.expression, exp.Neg):
        node.pop()  # LIMIT -1: SQLite's "no limit" (with an OFFSET, its only way to skip rows)
        return None
    if isinstance(node, exp.Collate) and isinstance(node.expression, exp.Var):
        collation = node.expression.name.lower()
        if collation in ("nocase", "binary"):
            node.set("expression", exp.Identifier(this=collation, quoted=True))
    return None


def _numeric_cast(node: exp.Expr) -> bool:
    return isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.DECIMAL)


def _is_negative_literal(node: exp.Expr | None) -> bool:
    return isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and node.this.is_number


def _integer_strftime_operands(node: exp.Expr) -> None:
    """`strftime('%Y', 'now') - strftime('%Y', born)`: SQLite does arithmetic on the digits
    strftime writes; PostgreSQL has no `text - text`. Single numeric fields become integers."""
    for key in ("this", "expression"):
        operand = node.args.get(key)
        if not isinstance(operand, exp.TimeToStr):
            continue
        layout = operand.args.get("format")
        if isinstance(layout, exp.Literal) and layout.this in _INTEGER_FIELDS:
            node.set(key, exp.Cast(this=operand.copy(), to=exp.DataType.build("BIGINT")))


def _ilike(like: exp.Like, escape: exp.Expr) -> exp.Expr:
    subject = exp.Cast(this=like.this.copy(), to=_TEXT.copy())
    ilike = exp.ILike(this=subject, expression=like.expression.copy())
    return exp.Escape(this=ilike, expression=escape.copy())


def _glob(node: exp.Glob) -> exp.Expr | None:
    pattern = node.expression
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        return None
    regex, position, text = ["^"], 0, pattern.this
    while position < len(text):
        char = text[position]
        if char == "*":
            regex.append(".*")
        elif char == "?":
            regex.append(".")
        elif char == "[" and (end := text.find("]", position + 2)) > 0:
            body = text[position + 1 : end]
            negate = body.startswith("^")
            body = body[1:] if negate else body
            body = "".join("\\" + c if c in "\\[" else c for c in body)
            regex.append("[" + ("^" if negate else "") + body + "]")
            position = end
        else:
            regex.append(re.escape(char))
        position += 1
    regex.append("$")
    return exp.RegexpLike(
        this=exp.Cast(this=node.this.copy(), to=_TEXT.copy()),
        expression=exp.Literal.string("".join(regex)),
    )


def _truncating_cast(node: exp.Cast) -> exp.Expr | None:
    operand = node.this
    if isinstance(operand, exp.Literal) and not operand.is_string and "." not in operand.this:
        return exp.Cast(this=operand.copy(), to=exp.DataType.build("BIGINT"))
    numeric = exp.Cast(this=operand.copy(), to=exp.DataType.build("NUMERIC"))
    truncated = exp.Anonymous(this="TRUNC", expressions=[numeric])
    return exp.Cast(this=truncated, to=exp.DataType.build("BIGINT"))


def _sqlite_function(node: exp.Anonymous) -> exp.Expr | None:
    name = function_name(node)
    args = node.expressions
    if name == "total" and len(args) == 1 and not isinstance(node.parent, exp.Window):
        total = exp.Sum(this=exp.Cast(this=args[0].copy(), to=exp.DataType.build("DOUBLE")))
        return exp.Coalesce(this=total, expressions=[exp.Literal.number("0.0")])
    if name in ("date", "datetime", "time", "julianday") and args:
        moment = _moment(args[0], args[1:])
        if moment is None:
            return None
        if name == "julianday":
            epoch = exp.Extract(this=exp.var("EPOCH"), expression=moment)
            days = exp.Div(this=epoch, expression=exp.Literal.number("86400.0"))
            return exp.Paren(this=exp.Add(this=days, expression=exp.Literal.number("2440587.5")))
        layout = {"date": _DATE_FORMAT, "datetime": _DATETIME_FORMAT, "time": _TIME_FORMAT}[name]
        return exp.Anonymous(this="TO_CHAR", expressions=[moment, exp.Literal.string(layout)])
    return None


def _moment(value: exp.Expr, modifiers: list[exp.Expr]) -> exp.Expr | None:
    """A TIMESTAMP expression for SQLite's time value and literal modifiers, or None."""
    if isinstance(value, exp.Literal) and value.is_string and value.this.lower() == "now":
        moment: exp.Expr = exp.Cast(this=exp.CurrentTimestamp(), to=_TIMESTAMP.copy())
    else:
        moment = exp.Cast(this=exp.Cast(this=value.copy(), to=_TEXT.copy()), to=_TIMESTAMP.copy())
    for modifier in modifiers:
        if not (isinstance(modifier, exp.Literal) and modifier.is_string):
            return None
        match = _MODIFIER.fullmatch(modifier.this)
        if match is None:
            return None
        amount, unit, start = match.groups()
        if start:
            field = start.split()[-1].upper()
            truncate = [exp.Literal.string(field), moment]
            moment = exp.Anonymous(this="DATE_TRUNC", expressions=truncate)
            continue
        interval = exp.Interval(this=exp.Literal.string(f"{amount.lstrip('+')} {unit.lower()}"))
        moment = exp.Add(this=moment, expression=interval)
    return moment


def _is_derived_table(node: exp.Subquery) -> bool:
    return isinstance(node.parent, (exp.From, exp.Join))
