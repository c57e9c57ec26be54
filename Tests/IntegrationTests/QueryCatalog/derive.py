#!/usr/bin/env python3
"""Derives the query test catalog (catalog.json) from the LiteCore test datasets.

Every case pairs a query (SQL++ for Mobile text, or LiteCore's JSON query tree) with the rows
LiteCore returns for it. The rows are NOT produced by running any SQL: each case has its own Python
function that evaluates what the query means directly over the parsed documents. The column titles
are written per case, following LiteCore's titling rules (below).

    python3 derive.py            # rewrites catalog.json next to this file (byte-identical on rerun)
    python3 derive.py --check    # exits 1 if catalog.json is not what this script would write

Standard library only. Datasets: ../../Fixtures/litecore/ (see SOURCES.md there).
Document IDs: JSON-lines files get "0000001".. by 1-based line number; states_titlecase.json (one
array) gets them by 1-based array position. Each dataset is its own database, default collection.

LITECORE FACTS THIS SCRIPT RELIES ON, AND WHERE THEY COME FROM
(couchbase/couchbase-lite-core, read through the `search`/`read_file` tools; "translator" means
LiteCore/Query/Translator/*, the query translator of LiteCore 3.2+)

Column titles
  * Property column -> its last path component (`name.first` -> `first`); `AS x` -> `x`;
    `META().id` -> `id`; `*` / `alias.*` -> the source's column name: the AS alias if given, else the
    collection as written (`FROM _default` -> `_default`, `FROM _` -> `_`), `_doc` when a JSON
    query has no FROM.  [ExprNodes.cc PropertyNode::asColumnName, MetaNode::asColumnName;
    SelectNodes.cc SourceNode ctor (`_columnName = collection`, incl. "_"), SourceNode("_doc");
    c4QueryTest.cc "Column titles": [['.'],['.name'],'.gender',['.address.zip']] ->
    _doc, name, gender, zip]
  * Unnamed expressions (functions, operators, literals) -> "$1", "$2", ... numbered by a counter
    over the UNNAMED columns only, not by column position: `SELECT name.first, upper(x), length(y)`
    -> first, $1, $2.  [SelectNodes.cc WhatNode::ensureUniqueColumnName: `count = 1; do name =
    "$count" while taken`, explicit aliases registered first; the pre-3.2 QueryParser.cc used
    `format("$%u", ++anonCount)` - same result. c4QueryTest.cc: [['+',..],['min()',..]] -> $1, $2]
  * A repeated name gets " #2", " #3": .name,.name,.name -> name, "name #2", "name #3".
    [c4QueryTest.cc "Column titles"]
  * ARRAY_COUNT(property) is rewritten into that property read through fl_count, so an unaliased
    `ARRAY_COUNT(likes)` column is titled `likes`.  [ExprNodes.cc FunctionNode::parse]
  * `SELECT *` titles: FROM _default._default / _default -> "_default", FROM _ -> "_",
    AS MyCollection -> "MyCollection".  [QueryTest.cc "Column Title of unqualified star"]
Values
  * MISSING is SQL NULL; JSON null is a zero-length blob tagged as null. A result column that is
    SQL NULL is MISSING; an empty blob is written as JSON null.  [SQLiteN1QLFunctions.cc
    isMissing/isNull; SQLiteQuery.cc SQLiteQueryRunner::encodeColumn]
  * A parameter bound to JSON null is skipped, and an unbound parameter stays unbound: both are
    MISSING.  [SQLiteQuery.cc SQLiteQueryRunner::bindParameters, its "left unbound" warning]
  * `x IS NULL` / `IS NOT NULL` compile to `x = fl_null()` / `x != fl_null()`, so both are
    NULL (false) when x is MISSING; `IS MISSING` / `IS NOT MISSING` compile to SQL IS [NOT] NULL.
    [NodesToSQL.cc OpType::is; c4QueryTest.cc "C4Query Basic": phone[0] IS MISSING matches,
    phone[0] IS null matches nothing]
  * IS VALUED -> isvalued(): 0 for MISSING and null, else 1; IS NOT VALUED -> NOT isvalued(..).
    [n1ql.leg expr6; SQLiteN1QLFunctions.cc isvalued]
  * CASE without ELSE yields JSON null (`ELSE fl_null()`).  [NodesToSQL.cc OpType::Case]
  * Comparisons, AND/OR/NOT, BETWEEN, IN (literal list) are SQLite's, with SQLite's three-valued
    logic (MISSING = NULL). Strings compare with the BINARY collation unless COLLATE says
    otherwise. `x IN (..)`/`x IN [..]` is SQL IN; `x IN expr` is array_contains(expr, x).
    [NodesToSQL.cc; ExprNodes.cc parseInNotIn; c4QueryTest.cc "C4Query IN"]
  * LIKE is case-sensitive; `%`, `_`, backslash escape. Under a non-binary COLLATE it is fl_like
    with that collation.  [c4QueryTest.cc "C4Query LIKE" (incl. collated sections)]
  * In the JSON form `/` is SQLite's `/`: integer division for two integers (NodesToSQL.cc infix).
    In SQL++ text, older n1ql.leg wrote `a / b` as `(1.0 * a) / b`; the newest n1ql.leg does not,
    so SQL++ cases divide by a float literal only.
  * `x IN (..)` / `x IN [..]` only: SQL++ has no `x IN property` (n1ql.leg inExpression); that
    form (array_contains) is tested through the JSON schema.
  * `||` is concat(): MISSING if any argument is MISSING; integers are written in decimal.
    [SQLiteN1QLFunctions.cc concat]
  * ANY x IN a SATISFIES p: EXISTS over the items; EVERY: NOT EXISTS(item with NOT p), so true for
    an empty array; ANY AND EVERY: non-empty AND EVERY. SOME = ANY.  [NodesToSQL.cc AnyEveryNode;
    c4QueryTest.cc "C4Query ANY" (EVERY on empty likes matches 42 docs)]
  * ORDER BY is SQLite's: MISSING (NULL) first ascending, last descending; LIMIT/OFFSET as SQLite.
  * Aggregates are SQLite's: COUNT(x) counts non-MISSING values, COUNT(*) rows, SUM of integers is
    an integer, AVG is a double, MIN/MAX compare with BINARY collation.
Functions  [SQLiteN1QLFunctions.cc; TranslatorTables.hh kFunctionList]
  * No SUBSTR in LiteCore (kFunctionList has none; its implementation is `#if 0`).
  * LENGTH: characters of a string; MISSING -> MISSING; non-string -> null. LOWER/UPPER similar.
  * TRIM/LTRIM/RTRIM with one argument strip whitespace (two-argument form is unimplemented).
  * CONTAINS(s, sub): case-sensitive substring test.
  * ROUND(x[, n]) = C round() (half away from zero) of x * 10^n, / 10^n; ABS/FLOOR/CEIL -> double.
  * ARRAY_COUNT counts non-null items, ARRAY_LENGTH all items, ARRAY_CONTAINS tests membership;
    a MISSING argument gives MISSING.
  * IFMISSING = coalesce (skips MISSING only); IFNULL skips only null, so IFNULL(MISSING, 'x') is
    MISSING; IFMISSINGORNULL skips both.
  * TYPE: "missing" is never returned for a MISSING argument (MISSING passes through); else
    "string", "number", "array", "object", "boolean", "null". ISSTRING/ISNUMBER/ISARRAY/ISOBJECT:
    booleans, MISSING passes through.
  * TOSTRING(int) -> decimal string; TONUMBER(string) -> integer if it parses as one.
  * REGEXP_LIKE and REGEXP_CONTAINS are BOTH registered to the same function, which uses
    std::regex_search (ECMAScript): REGEXP_LIKE is NOT a whole-string match in LiteCore. Cases here
    use anchored patterns for REGEXP_LIKE, so search and match agree.
  * Dates: STR_TO_MILLIS/STR_TO_UTC/MILLIS_TO_STR use the device's local time zone when the input
    has no zone, so cases append 'T00:00:00Z' to the date-only fields. MILLIS_TO_UTC and
    DATE_ADD_STR (with a 'Z' input) print "YYYY-MM-DDTHH:MM:SSZ" (".mmm" only if non-zero).
    DATE_DIFF_STR(a, b, 'year') is the difference of the calendar years (sign: a later -> +);
    'day' is the true day count. Both ignore time zones.  [SQLiteDateTimeHelpers.hh doDateDiff,
    diffPart, doDateAdd; ParseDate.cc FormatISO8601Date]
Collation  [n1ql.leg collateSuffix; N1QLParserTest.cc "N1QL collation"; ExprNodes.cc CollateNode]
  * `(expr) COLLATE NOCASE` -> {"CASE": false}; `COLLATE (UNICODE NOCASE NODIAC)` etc. The
    collation is taken by the FIRST comparison/LIKE parsed inside its operand (only if there is
    none is the operand itself collated). In the newest n1ql.leg a trailing COLLATE applies to
    the whole expression before it (rule expr9). Cases use `(a = b) COLLATE ..` and
    `ORDER BY alias COLLATE ..`, never `a COLLATE x = b` or a COLLATE around a CASE with a LIKE.
N1QL syntax  [n1ql.leg; n1ql_parser_internal.hh kReservedWords]
  * LIKE, ORDER, ALL-style keywords cannot be identifiers: ANY variables are named `x`/`l`, and
    aliases that are keywords or function names are back-quoted.
Full-text search  [c4QueryTest.cc "C4Query FTS*"]
  * MATCH(index, 'term') matches documents with that token in an indexed property; the expected
    IDs for 'Hwy' and 'Santa' equal LiteCore's own test results (checked below). RANK order is not
    derived (skipped).

Skipped as not derivable or doubtful: META().sequence / revisionID; MILLIS_TO_STR and STR_TO_*
without a zone (local time zone); RANK ordering; unanchored REGEXP_LIKE (LiteCore quirk above);
TYPE() of a comparison result (SQLite integers lose their boolean subtype); TYPE(NULL) (null or
"null" depending on SQLite passing the null subtype on); SQL++ division of two integers (see
above); `._id` as a column title (see META_ID); comparisons across types.
"""

import calendar
import datetime
import json
import math
import os
import re
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "Fixtures", "litecore"))
OUTPUT = os.path.join(HERE, "catalog.json")


# ---------------------------------------------------------------------------------------------
# Datasets


def load_json_lines(filename):
    with open(os.path.join(DATA_DIR, filename), encoding="utf-8") as f:
        lines = [line for line in f.read().split("\n") if line.strip()]
    return [("%07d" % (i + 1), json.loads(line)) for i, line in enumerate(lines)]


def load_json_array(filename):
    with open(os.path.join(DATA_DIR, filename), encoding="utf-8") as f:
        items = json.load(f)
    return [("%07d" % (i + 1), item) for i, item in enumerate(items)]


DATASETS = {
    "names_100": load_json_lines("names_100.json"),
    "profiles_100": load_json_lines("profiles_100.json"),
    "nested": load_json_lines("nested.json"),
    "paths": load_json_lines("paths.json"),
    "students": load_json_lines("students.json"),
    "students2": load_json_lines("students2.json"),
    "states_titlecase": load_json_array("states_titlecase.json"),
}


# ---------------------------------------------------------------------------------------------
# Values: MISSING, property paths, three-valued logic, SQLite-style ordering


class _Missing:
    def __repr__(self):
        return "MISSING"


MISSING = _Missing()


def prop(value, path):
    """The value at `path` ("a.b[0].c") inside `value`, or MISSING."""
    for key, index in re.findall(r"([^.\[\]]+)|\[(-?\d+)\]", path):
        if key:
            if not isinstance(value, dict) or key not in value:
                return MISSING
            value = value[key]
        else:
            i = int(index)
            if not isinstance(value, list) or not -len(value) <= i < len(value):
                return MISSING
            value = value[i]
    return value


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def NOT(a):
    return None if a is None else not a


def AND(*xs):
    if any(x is False for x in xs):
        return False
    return None if any(x is None for x in xs) else True


def OR(*xs):
    if any(x is True for x in xs):
        return True
    return None if any(x is None for x in xs) else False


def cmp(a, op, b):
    """A SQL comparison between two strings or two numbers; NULL (None) if either is MISSING."""
    if a is MISSING or b is MISSING:
        return None
    assert (isinstance(a, str) and isinstance(b, str)) or (is_num(a) and is_num(b)), (a, b)
    if isinstance(a, str):
        a, b = a.encode("utf-8"), b.encode("utf-8")  # BINARY collation
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def like(s, pattern, fold=None):
    """LIKE: `%` any run, `_` one character, backslash escapes. `fold` maps both sides first."""
    if s is MISSING:
        return None
    assert isinstance(s, str)
    if fold:
        s, pattern = fold(s), fold(pattern)
    regex, i = "", 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            regex += re.escape(pattern[i + 1])
            i += 2
            continue
        regex += ".*" if c == "%" else "." if c == "_" else re.escape(c)
        i += 1
    return re.fullmatch(regex, s, re.DOTALL) is not None


def ascii_nocase(s):
    """SQLite NOCASE: ASCII letters folded to lower case."""
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in s)


def no_diacritics(s):
    return "".join(c for c in unicodedata.normalize("NFD", s) if unicodedata.category(c) != "Mn")


def unicode_primary(s):
    """Unicode collation at primary strength (case and diacritics ignored)."""
    return no_diacritics(s).casefold()


def sort_key(v):
    """SQLite's order of values: NULL (MISSING) < numbers < text (BINARY)."""
    if v is MISSING:
        return (0, 0)
    if is_num(v):
        return (1, v)
    assert isinstance(v, str), v
    return (2, v.encode("utf-8"))


def order(items, keys, project, offset=0, limit=None):
    """ORDER BY: `keys` is a list of (key function, descending). The result must not depend on
    how ties are broken: items whose keys are all equal must project to identical rows."""
    decorated = [(tuple(sort_key(k(x)) for k, _ in keys), x) for x in items]
    for position in reversed(range(len(keys))):
        decorated.sort(key=lambda d: d[0][position], reverse=keys[position][1])
    rows = [project(x) for _, x in decorated]
    for i in range(1, len(decorated)):
        if decorated[i][0] == decorated[i - 1][0]:
            assert rows[i] == rows[i - 1], "ORDER BY leaves a tie between different rows: %r / %r" % (
                rows[i - 1], rows[i])
    end = None if limit is None else offset + limit
    return rows[offset:end]


def c_round(x):
    """C's round(): halves away from zero."""
    return math.copysign(math.floor(abs(x) + 0.5), x)


def epoch_millis(date_text):
    """'YYYY-MM-DD' read as midnight UTC, in milliseconds since 1970."""
    d = datetime.date.fromisoformat(date_text)
    return calendar.timegm(d.timetuple()) * 1000


def utc_text(millis):
    t = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=millis)
    text = t.strftime("%Y-%m-%dT%H:%M:%S")
    if millis % 1000:
        text += ".%03d" % (millis % 1000)
    return text + "Z"


def year_of(date_text):
    return int(date_text[:4])


def tokens(text):
    return re.findall(r"[0-9a-z]+", text.lower())


# ---------------------------------------------------------------------------------------------
# Case registry


CASES = []

# META().id as N1QL writes it. (`["._id"]` means the same, but LiteCore versions title that
# column differently: "_id" before the 3.2 translator, "id" after.)
META_ID = ["_.", ["meta()"], ".id"]


def case(name, dataset, construct, columns, n1ql=None, query=None, params=None, ordered=False, index=None):
    assert (n1ql is None) != (query is None), name

    def register(fn):
        entry = {"name": name, "dataset": dataset, "construct": construct, "columns": columns,
                 "ordered": ordered, "fn": fn}
        if n1ql is not None:
            entry["n1ql"] = n1ql
        else:
            entry["json"] = query
        if params is not None:
            entry["params"] = params
        if index is not None:
            entry["needs_index"] = index
        CASES.append(entry)
        return fn
    return register


def ids_where(docs, predicate):
    """Rows [[id]] for documents whose predicate is TRUE (not false, not NULL)."""
    return [[i] for i, d in docs if predicate(d) is True]


def count_where(docs, predicate):
    return [[sum(1 for _, d in docs if predicate(d) is True)]]


# Expected IDs published in LiteCore's own tests (c4QueryTest.cc). They are not used to build
# the catalog; derive() checks that the independently derived rows agree with them.
LITECORE_ANCHORS = {
    "where_eq_string": ["0000001", "0000015", "0000036", "0000043", "0000053", "0000064", "0000072", "0000073"],
    "and_phone_count_and_gender": ["0000002", "0000014", "0000017", "0000027", "0000031", "0000033", "0000038",
                                   "0000039", "0000045", "0000047", "0000049", "0000056", "0000063", "0000065",
                                   "0000075", "0000082", "0000089", "0000094", "0000097"],
    "like_lowercase_j": ["0000085"],
    "like_uppercase_j": ["0000002", "0000004", "0000008", "0000017", "0000028", "0000030", "0000045", "0000052",
                         "0000067", "0000071", "0000088", "0000094"],
    "like_prefix": ["0000008", "0000028"],
    "like_underscore_end": ["0000028"],
    "like_underscore_start": ["0000028"],
    "like_underscore_middle": ["0000028"],
    "like_backtracking": ["0000028", "0000052", "0000088"],
    "like_collate_unicode_nocase": ["0000008", "0000028"],
    "json_like_collate_everything_insensitive": ["0000008", "0000028"],
    "json_contains_collate_everything_insensitive": ["0000008", "0000028"],
    "contains_case_sensitive": ["0000008", "0000028"],
    "in_paren_list": ["0000091", "0000093"],
    "in_array_property": ["0000004", "0000056", "0000064", "0000079", "0000099"],
    "any_likes_climbing": ["0000017", "0000021", "0000023", "0000045", "0000060"],
    "any_and_every_like_l": ["0000017", "0000027", "0000060", "0000068"],
    "any_nested_shape_red": ["0000001", "0000003"],
    "any_paths_san_jose": ["0000001"],
    "any_paths_palo_alto": ["0000001", "0000002"],
    "json_any_variable_path": ["0000001"],
    "order_state_ca_by_last": ["0000015", "0000036", "0000072", "0000043", "0000001", "0000064", "0000073", "0000053"],
    "value_index_first_length": ["0000015", "0000099"],
    "fts_street_hwy": ["0000013", "0000015", "0000043", "0000044", "0000052"],
    "fts_address_santa": ["0000015", "0000044", "0000068", "0000072"],
    "fts_address_street_column_santa": ["0000044", "0000068"],
    "fts_address_street_santa_or_saint": ["0000020", "0000044", "0000068", "0000077"],
    "fts_with_other_conditions": ["0000015"],
    "is_missing_phone0": None,  # LiteCore checks only the first four: 4, 6, 8, 15 (see below)
}


# =============================================================================================
# WHERE comparisons


@case("where_eq_string", "names_100", "comparison", ["id"],
      n1ql="SELECT META().id FROM _ WHERE contact.address.state = 'CA'")
def _(docs):
    return ids_where(docs, lambda d: cmp(prop(d, "contact.address.state"), "=", "CA"))


@case("where_double_equals", "names_100", "comparison", ["first", "last"],
      n1ql="SELECT name.first, name.last FROM _ WHERE contact.address.city == 'Saint Louis'")
def _(docs):
    return [[prop(d, "name.first"), prop(d, "name.last")] for _, d in docs
            if cmp(prop(d, "contact.address.city"), "=", "Saint Louis")]


@case("where_not_equal_count", "names_100", "comparison", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE contact.address.state != 'NY'")
def _(docs):
    return count_where(docs, lambda d: cmp(prop(d, "contact.address.state"), "!=", "NY"))


@case("where_angle_not_equal", "names_100", "comparison", ["id"],
      n1ql="SELECT META().id FROM _ WHERE gender <> 'female' AND contact.address.state = 'NY'")
def _(docs):
    return ids_where(docs, lambda d: AND(cmp(d["gender"], "!=", "female"),
                                         cmp(prop(d, "contact.address.state"), "=", "NY")))


@case("where_less_than_string", "names_100", "comparison", ["first", "birthday"],
      n1ql="SELECT name.first, birthday FROM _ WHERE birthday < '1945-01-01'")
def _(docs):
    return [[prop(d, "name.first"), d["birthday"]] for _, d in docs if cmp(d["birthday"], "<", "1945-01-01")]


@case("where_greater_than_string", "names_100", "comparison", ["id", "memberSince"],
      n1ql="SELECT META().id, memberSince FROM _ WHERE memberSince > '2012-04-01'")
def _(docs):
    return [[i, d["memberSince"]] for i, d in docs if cmp(d["memberSince"], ">", "2012-04-01")]


@case("where_less_than_number_count", "names_100", "comparison", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE ARRAY_COUNT(likes) < 1")
def _(docs):
    return count_where(docs, lambda d: cmp(len(d["likes"]), "<", 1))


@case("where_greater_equal_number", "names_100", "comparison", ["id", "likes"],
      n1ql="SELECT META().id, likes FROM _ WHERE ARRAY_COUNT(likes) >= 3")
def _(docs):
    return [[i, d["likes"]] for i, d in docs if cmp(len(d["likes"]), ">=", 3)]


@case("where_greater_than_number", "names_100", "comparison", ["first", "last"],
      n1ql="SELECT name.first, name.last FROM _ WHERE LENGTH(name.first) + LENGTH(name.last) > 15")
def _(docs):
    return [[prop(d, "name.first"), prop(d, "name.last")] for _, d in docs
            if cmp(len(prop(d, "name.first")) + len(prop(d, "name.last")), ">", 15)]


@case("where_less_equal_number", "nested", "comparison", ["id"],
      n1ql="SELECT META().id FROM _ WHERE shapes[0].size <= 3")
def _(docs):
    return ids_where(docs, lambda d: cmp(prop(d, "shapes[0].size"), "<=", 3))


@case("where_not_equal_missing_excluded", "names_100", "comparison", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE contact.phone[0] != '310-8268551'")
def _(docs):
    # MISSING != 'x' is NULL, so the 26 documents without a phone are not counted.
    return count_where(docs, lambda d: cmp(prop(d, "contact.phone[0]"), "!=", "310-8268551"))


@case("json_where_eq_string", "names_100", "comparison", ["first"],
      query={"WHAT": [[".name.first"]], "WHERE": ["=", [".contact.address.state"], "WA"]})
def _(docs):
    return [[prop(d, "name.first")] for _, d in docs if cmp(prop(d, "contact.address.state"), "=", "WA")]


@case("json_where_less_than_number", "nested", "comparison", ["color"],
      query={"WHAT": [[".shapes[1].color"]], "WHERE": ["<", [".shapes[1].size"], 5]})
def _(docs):
    return [[prop(d, "shapes[1].color")] for _, d in docs if cmp(prop(d, "shapes[1].size"), "<", 5)]


@case("json_where_not_equal_string", "states_titlecase", "comparison", ["abbreviation"],
      query={"WHAT": [[".abbreviation"]], "WHERE": ["AND", ["!=", [".abbreviation"], "NY"],
                                                    ["LIKE", [".name"], "New %"]]})
def _(docs):
    return [[d["abbreviation"]] for _, d in docs
            if AND(cmp(d["abbreviation"], "!=", "NY"), like(d["name"], "New %"))]


# =============================================================================================
# AND / OR / NOT


@case("and_phone_count_and_gender", "names_100", "logic", ["id"],
      n1ql="SELECT META().id FROM _ WHERE ARRAY_COUNT(contact.phone) = 2 AND gender = 'male'")
def _(docs):
    return ids_where(docs, lambda d: AND(cmp(len(prop(d, "contact.phone")), "=", 2), cmp(d["gender"], "=", "male")))


@case("or_two_states", "names_100", "logic", ["id", "state"],
      n1ql="SELECT META().id, contact.address.state FROM _ "
           "WHERE contact.address.state = 'NJ' OR contact.address.state = 'VT'")
def _(docs):
    return [[i, prop(d, "contact.address.state")] for i, d in docs
            if OR(cmp(prop(d, "contact.address.state"), "=", "NJ"), cmp(prop(d, "contact.address.state"), "=", "VT"))]


@case("not_parenthesised", "names_100", "logic", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE NOT (gender = 'female' OR ARRAY_COUNT(likes) = 0)")
def _(docs):
    return count_where(docs, lambda d: NOT(OR(cmp(d["gender"], "=", "female"), cmp(len(d["likes"]), "=", 0))))


@case("and_binds_tighter_than_or", "names_100", "logic", ["id"],
      n1ql="SELECT META().id FROM _ WHERE contact.address.state = 'KS' OR "
           "contact.address.state = 'MO' AND gender = 'female'")
def _(docs):
    return ids_where(docs, lambda d: OR(cmp(prop(d, "contact.address.state"), "=", "KS"),
                                        AND(cmp(prop(d, "contact.address.state"), "=", "MO"),
                                            cmp(d["gender"], "=", "female"))))


@case("or_with_missing_operand", "names_100", "logic", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE contact.phone[0] LIKE '3%' OR gender = 'male'")
def _(docs):
    # NULL OR TRUE is TRUE; NULL OR FALSE is NULL.
    return count_where(docs, lambda d: OR(like(prop(d, "contact.phone[0]"), "3%"), cmp(d["gender"], "=", "male")))


@case("not_of_missing_is_not_true", "names_100", "logic", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE NOT (contact.phone[0] LIKE '3%')")
def _(docs):
    return count_where(docs, lambda d: NOT(like(prop(d, "contact.phone[0]"), "3%")))


@case("and_with_missing_operand", "names_100", "logic", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE NOT (contact.phone[0] LIKE '3%' AND gender = 'male')")
def _(docs):
    # NOT(NULL AND FALSE) = NOT FALSE = TRUE; NOT(NULL AND TRUE) = NULL.
    return count_where(docs, lambda d: NOT(AND(like(prop(d, "contact.phone[0]"), "3%"), cmp(d["gender"], "=", "male"))))


@case("json_and_or_not", "names_100", "logic", ["first"],
      query={"WHAT": [[".name.first"]],
             "WHERE": ["AND", ["=", [".gender"], "female"],
                       ["OR", ["=", [".contact.address.state"], "NY"], ["=", [".contact.address.state"], "CA"]],
                       ["NOT", ["=", ["ARRAY_COUNT()", [".likes"]], 0]]]})
def _(docs):
    return [[prop(d, "name.first")] for _, d in docs
            if AND(cmp(d["gender"], "=", "female"),
                   OR(cmp(prop(d, "contact.address.state"), "=", "NY"), cmp(prop(d, "contact.address.state"), "=", "CA")),
                   NOT(cmp(len(d["likes"]), "=", 0)))]


# =============================================================================================
# LIKE / NOT LIKE


def _like_case(name, pattern, field="name.first"):
    @case(name, "names_100", "like", ["id"],
          n1ql="SELECT META().id FROM _ WHERE %s LIKE '%s'" % (field, pattern))
    def _(docs):
        return ids_where(docs, lambda d: like(prop(d, field), pattern))


_like_case("like_lowercase_j", "%j%")
_like_case("like_uppercase_j", "%J%")
_like_case("like_prefix", "Jen%")
_like_case("like_underscore_end", "Jen_")
_like_case("like_underscore_start", "_ene")
_like_case("like_underscore_middle", "J_ne")
_like_case("like_backtracking", "J%e")


@case("not_like", "states_titlecase", "like", ["name"],
      n1ql="SELECT name FROM _ WHERE name NOT LIKE '%a%' AND name NOT LIKE 'A%'")
def _(docs):
    return [[d["name"]] for _, d in docs if AND(NOT(like(d["name"], "%a%")), NOT(like(d["name"], "A%")))]


@case("like_on_missing_excluded_both_ways", "names_100", "like", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE contact.phone[1] LIKE '%' OR contact.phone[1] NOT LIKE '%'")
def _(docs):
    return count_where(docs, lambda d: OR(like(prop(d, "contact.phone[1]"), "%"), NOT(like(prop(d, "contact.phone[1]"), "%"))))


@case("like_collate_unicode_nocase", "names_100", "like", ["id"],
      n1ql="SELECT META().id FROM _ WHERE (name.first LIKE 'jen%') COLLATE (UNICODE NOCASE)")
def _(docs):
    return ids_where(docs, lambda d: like(prop(d, "name.first"), "jen%", fold=lambda s: s.casefold()))


@case("json_like_collate_everything_insensitive", "names_100", "like", ["id"],
      query={"WHAT": [META_ID],
             "WHERE": ["COLLATE", {"UNICODE": True, "CASE": False, "DIAC": False},
                       ["LIKE", [".name.first"], "jén%"]]})
def _(docs):
    return ids_where(docs, lambda d: like(prop(d, "name.first"), "jén%", fold=unicode_primary))


# =============================================================================================
# BETWEEN / NOT BETWEEN


@case("between_strings", "names_100", "between", ["first", "birthday"],
      n1ql="SELECT name.first, birthday FROM _ WHERE birthday BETWEEN '1960-01-01' AND '1962-12-31'")
def _(docs):
    return [[prop(d, "name.first"), d["birthday"]] for _, d in docs
            if AND(cmp(d["birthday"], ">=", "1960-01-01"), cmp(d["birthday"], "<=", "1962-12-31"))]


@case("not_between_numbers", "names_100", "between", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE LENGTH(name.first) NOT BETWEEN 4 AND 7")
def _(docs):
    return count_where(docs, lambda d: NOT(AND(cmp(len(prop(d, "name.first")), ">=", 4),
                                               cmp(len(prop(d, "name.first")), "<=", 7))))


@case("between_numbers_inclusive", "nested", "between", ["id"],
      n1ql="SELECT META().id FROM _ WHERE shapes[0].size BETWEEN 3 AND 8")
def _(docs):
    return ids_where(docs, lambda d: AND(cmp(prop(d, "shapes[0].size"), ">=", 3), cmp(prop(d, "shapes[0].size"), "<=", 8)))


@case("between_missing_excluded", "names_100", "between", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE contact.phone[0] NOT BETWEEN '5' AND '6'")
def _(docs):
    p = lambda d: prop(d, "contact.phone[0]")
    return count_where(docs, lambda d: NOT(AND(cmp(p(d), ">=", "5"), cmp(p(d), "<=", "6"))))


@case("json_between", "states_titlecase", "between", ["abbreviation"],
      query={"WHAT": [[".abbreviation"]], "WHERE": ["BETWEEN", [".name"], "Maine", "Missouri"]})
def _(docs):
    return [[d["abbreviation"]] for _, d in docs if AND(cmp(d["name"], ">=", "Maine"), cmp(d["name"], "<=", "Missouri"))]


# =============================================================================================
# IN / NOT IN


@case("in_paren_list", "names_100", "in", ["id"],
      n1ql="SELECT META().id FROM _ WHERE name.first IN ('Eddie', 'Verna')")
def _(docs):
    return ids_where(docs, lambda d: prop(d, "name.first") in ("Eddie", "Verna"))


@case("in_bracket_list", "names_100", "in", ["first", "state"],
      n1ql="SELECT name.first, contact.address.state FROM _ WHERE contact.address.state IN ['VT', 'ME', 'NH']")
def _(docs):
    return [[prop(d, "name.first"), prop(d, "contact.address.state")] for _, d in docs
            if prop(d, "contact.address.state") in ("VT", "ME", "NH")]


@case("not_in_list", "names_100", "in", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE contact.address.state NOT IN ('NY', 'CA', 'MO')")
def _(docs):
    return count_where(docs, lambda d: prop(d, "contact.address.state") not in ("NY", "CA", "MO"))


@case("in_numbers", "names_100", "in", ["id"],
      n1ql="SELECT META().id FROM _ WHERE ARRAY_COUNT(likes) IN (4, 5)")
def _(docs):
    return ids_where(docs, lambda d: len(d["likes"]) in (4, 5))


@case("in_array_property", "names_100", "in", ["id"],
      query={"WHAT": [META_ID], "WHERE": ["IN", "reading", [".likes"]]})
def _(docs):
    return ids_where(docs, lambda d: "reading" in d["likes"])


@case("not_in_array_property", "names_100", "in", ["n"],
      query={"WHAT": [["AS", ["COUNT()", ["."]], "n"]], "WHERE": ["NOT IN", "chatting", [".likes"]]})
def _(docs):
    return count_where(docs, lambda d: "chatting" not in d["likes"])


@case("not_in_missing_excluded", "names_100", "in", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE likes[0] NOT IN ('chatting')")
def _(docs):
    return count_where(docs, lambda d: None if prop(d, "likes[0]") is MISSING else prop(d, "likes[0]") != "chatting")


@case("json_in_literal_array", "names_100", "in", ["id"],
      query={"WHAT": [META_ID], "WHERE": ["IN", [".name.first"], ["[]", "Eddie", "Verna", "Nobody"]]})
def _(docs):
    return ids_where(docs, lambda d: prop(d, "name.first") in ("Eddie", "Verna", "Nobody"))


@case("json_not_in", "states_titlecase", "in", ["name"],
      query={"WHAT": [[".name"]],
             "WHERE": ["AND", ["LIKE", [".name"], "North%"], ["NOT IN", [".abbreviation"], ["[]", "ND"]]]})
def _(docs):
    return [[d["name"]] for _, d in docs if AND(like(d["name"], "North%"), d["abbreviation"] not in ("ND",))]


# =============================================================================================
# NULL / MISSING / VALUED


@case("is_missing_phone0", "names_100", "null_missing", ["id"],
      n1ql="SELECT META().id FROM _ WHERE contact.phone[0] IS MISSING")
def _(docs):
    return ids_where(docs, lambda d: prop(d, "contact.phone[0]") is MISSING)


@case("is_not_missing_phone0", "names_100", "null_missing", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE contact.phone[0] IS NOT MISSING")
def _(docs):
    return count_where(docs, lambda d: prop(d, "contact.phone[0]") is not MISSING)


@case("is_null_of_missing_matches_nothing", "names_100", "null_missing", ["id"],
      n1ql="SELECT META().id FROM _ WHERE contact.phone[0] IS NULL")
def _(docs):
    # `x = fl_null()`: NULL for MISSING, false for strings. No document holds a JSON null.
    return ids_where(docs, lambda d: None if prop(d, "contact.phone[0]") is MISSING else prop(d, "contact.phone[0]") is None)


@case("is_not_null_excludes_missing", "names_100", "null_missing", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE contact.phone[0] IS NOT NULL")
def _(docs):
    return count_where(docs, lambda d: None if prop(d, "contact.phone[0]") is MISSING else prop(d, "contact.phone[0]") is not None)


@case("is_valued", "names_100", "null_missing", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE contact.phone[0] IS VALUED")
def _(docs):
    return count_where(docs, lambda d: prop(d, "contact.phone[0]") not in (MISSING, None))


@case("is_not_valued", "names_100", "null_missing", ["id"],
      n1ql="SELECT META().id FROM _ WHERE contact.phone[0] IS NOT VALUED")
def _(docs):
    return ids_where(docs, lambda d: prop(d, "contact.phone[0]") in (MISSING, None))


@case("absent_field_is_missing", "names_100", "null_missing", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE name.middle IS MISSING")
def _(docs):
    return count_where(docs, lambda d: prop(d, "name.middle") is MISSING)


def _null_unless_male(d):
    """CASE WHEN gender = 'male' THEN 'm' END: JSON null for everyone else."""
    return "m" if d["gender"] == "male" else None


@case("computed_null_is_null", "names_100", "null_missing", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE (CASE WHEN gender = 'male' THEN 'm' END) IS NULL")
def _(docs):
    return count_where(docs, lambda d: _null_unless_male(d) is None)


@case("computed_null_is_not_missing", "names_100", "null_missing", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE (CASE WHEN gender = 'male' THEN 'm' END) IS MISSING")
def _(docs):
    return count_where(docs, lambda d: _null_unless_male(d) is MISSING)


@case("computed_null_is_not_valued", "names_100", "null_missing", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE (CASE WHEN gender = 'male' THEN 'm' END) IS NOT VALUED")
def _(docs):
    return count_where(docs, lambda d: _null_unless_male(d) in (MISSING, None))


@case("null_and_missing_columns", "names_100", "null_missing", ["n", "m", "p"],
      n1ql="SELECT NULL AS n, MISSING AS m, contact.phone[0] AS p FROM _ "
           "WHERE META().id IN ('0000003', '0000004') ORDER BY META().id", ordered=True)
def _(docs):
    return order([(i, d) for i, d in docs if i in ("0000003", "0000004")], [(lambda x: x[0], False)],
                 lambda x: [None, MISSING, prop(x[1], "contact.phone[0]")])


@case("missing_array_item", "nested", "null_missing", ["id"],
      n1ql="SELECT META().id FROM _ WHERE shapes[0] IS MISSING")
def _(docs):
    return ids_where(docs, lambda d: prop(d, "shapes[0]") is MISSING)


@case("missing_past_array_end", "paths", "null_missing", ["id", "c"],
      n1ql="SELECT META().id, paths[2].city AS c FROM _ WHERE paths[3] IS MISSING AND paths[2] IS VALUED")
def _(docs):
    return [[i, prop(d, "paths[2].city")] for i, d in docs
            if prop(d, "paths[3]") is MISSING and prop(d, "paths[2]") not in (MISSING, None)]


@case("json_is_missing", "names_100", "null_missing", ["id"],
      query={"WHAT": [META_ID], "WHERE": ["IS", [".contact.phone[0]"], ["MISSING"]]})
def _(docs):
    return ids_where(docs, lambda d: prop(d, "contact.phone[0]") is MISSING)


@case("json_is_not_null", "names_100", "null_missing", ["n"],
      query={"WHAT": [["AS", ["COUNT()", ["."]], "n"]], "WHERE": ["IS NOT", [".contact.phone[1]"], None]})
def _(docs):
    return count_where(docs, lambda d: None if prop(d, "contact.phone[1]") is MISSING else prop(d, "contact.phone[1]") is not None)


@case("json_is_valued", "nested", "null_missing", ["id"],
      query={"WHAT": [META_ID], "WHERE": ["IS VALUED", [".shapes[2].color"]]})
def _(docs):
    return ids_where(docs, lambda d: prop(d, "shapes[2].color") not in (MISSING, None))


# =============================================================================================
# Arithmetic and concatenation


def _first_ten(docs):
    return [(i, d) for i, d in docs if i <= "0000010"]


@case("arithmetic_mul_add", "names_100", "arithmetic", ["id", "score"],
      n1ql="SELECT META().id, ARRAY_COUNT(likes) * 10 + LENGTH(name.first) AS score FROM _ "
           "WHERE META().id <= '0000010' ORDER BY META().id", ordered=True)
def _(docs):
    return order(_first_ten(docs), [(lambda x: x[0], False)],
                 lambda x: [x[0], len(x[1]["likes"]) * 10 + len(x[1]["name"]["first"])])


@case("arithmetic_division_by_float", "names_100", "arithmetic", ["first", "half"],
      n1ql="SELECT name.first, LENGTH(name.first) / 2.0 AS half FROM _ WHERE META().id <= '0000010' "
           "ORDER BY META().id", ordered=True)
def _(docs):
    # An integer divided by a float is a float: 3 / 2.0 = 1.5. (Two integers are avoided: see the
    # module comment.)
    return order(_first_ten(docs), [(lambda x: x[0], False)],
                 lambda x: [x[1]["name"]["first"], len(x[1]["name"]["first"]) / 2.0])


@case("json_integer_division", "names_100", "arithmetic", ["first", "half"],
      query={"WHAT": [[".name.first"], ["AS", ["/", ["LENGTH()", [".name.first"]], 2], "half"]],
             "WHERE": ["<=", ["._id"], "0000010"], "ORDER_BY": [["._id"]]}, ordered=True)
def _(docs):
    # The JSON form's `/` is SQLite's: integer division of two integers.
    return order(_first_ten(docs), [(lambda x: x[0], False)],
                 lambda x: [x[1]["name"]["first"], len(x[1]["name"]["first"]) // 2])


@case("arithmetic_modulo_and_minus", "names_100", "arithmetic", ["last", "r", "d"],
      n1ql="SELECT name.last, LENGTH(name.last) % 3 AS r, LENGTH(name.first) - LENGTH(name.last) AS d "
           "FROM _ WHERE META().id <= '0000010' ORDER BY META().id", ordered=True)
def _(docs):
    return order(_first_ten(docs), [(lambda x: x[0], False)],
                 lambda x: [x[1]["name"]["last"], len(x[1]["name"]["last"]) % 3,
                            len(x[1]["name"]["first"]) - len(x[1]["name"]["last"])])


@case("arithmetic_unary_minus_and_parens", "names_100", "arithmetic", ["id", "neg", "p"],
      n1ql="SELECT META().id, -ARRAY_COUNT(likes) AS neg, (LENGTH(name.first) + 1) * 2 AS p FROM _ "
           "WHERE META().id <= '0000010' ORDER BY META().id", ordered=True)
def _(docs):
    return order(_first_ten(docs), [(lambda x: x[0], False)],
                 lambda x: [x[0], -len(x[1]["likes"]), (len(x[1]["name"]["first"]) + 1) * 2])


@case("arithmetic_on_missing_is_missing", "names_100", "arithmetic", ["id", "x"],
      n1ql="SELECT META().id, LENGTH(contact.phone[0]) + 1 AS x FROM _ "
           "WHERE META().id IN ('0000003', '0000004') ORDER BY META().id", ordered=True)
def _(docs):
    def x(d):
        p = prop(d, "contact.phone[0]")
        return MISSING if p is MISSING else len(p) + 1
    return order([(i, d) for i, d in docs if i in ("0000003", "0000004")], [(lambda t: t[0], False)],
                 lambda t: [t[0], x(t[1])])


@case("arithmetic_in_where_nested", "nested", "arithmetic", ["id", "total"],
      n1ql="SELECT META().id, shapes[0].size + shapes[1].size AS total FROM _ "
           "WHERE shapes[0].size * 2 > 5")
def _(docs):
    def total(d):
        a, b = prop(d, "shapes[0].size"), prop(d, "shapes[1].size")
        return MISSING if MISSING in (a, b) else a + b
    return [[i, total(d)] for i, d in docs
            if prop(d, "shapes[0].size") is not MISSING and cmp(prop(d, "shapes[0].size") * 2, ">", 5)]


@case("json_arithmetic", "nested", "arithmetic", ["id", "$1"],
      query={"WHAT": [META_ID, ["-", ["*", [".shapes[0].size"], 3], 1]], "WHERE": ["IS VALUED", [".shapes[0]"]]})
def _(docs):
    return [[i, prop(d, "shapes[0].size") * 3 - 1] for i, d in docs if prop(d, "shapes[0]") is not MISSING]


@case("concat_names", "names_100", "concat", ["full"],
      n1ql="SELECT name.first || ' ' || name.last AS full FROM _ WHERE contact.address.state = 'NY'")
def _(docs):
    return [[d["name"]["first"] + " " + d["name"]["last"]] for _, d in docs if d["contact"]["address"]["state"] == "NY"]


@case("concat_with_number", "names_100", "concat", ["tag"],
      n1ql="SELECT name.first || '-' || ARRAY_COUNT(likes) AS tag FROM _ WHERE META().id <= '0000010' "
           "ORDER BY META().id", ordered=True)
def _(docs):
    return order(_first_ten(docs), [(lambda x: x[0], False)],
                 lambda x: ["%s-%d" % (x[1]["name"]["first"], len(x[1]["likes"]))])


@case("concat_with_missing_is_missing", "names_100", "concat", ["id", "s"],
      n1ql="SELECT META().id, 'tel:' || contact.phone[0] AS s FROM _ "
           "WHERE META().id IN ('0000003', '0000004') ORDER BY META().id", ordered=True)
def _(docs):
    def s(d):
        p = prop(d, "contact.phone[0]")
        return MISSING if p is MISSING else "tel:" + p
    return order([(i, d) for i, d in docs if i in ("0000003", "0000004")], [(lambda t: t[0], False)],
                 lambda t: [t[0], s(t[1])])


@case("json_concat", "states_titlecase", "concat", ["label"],
      query={"WHAT": [["AS", ["||", [".abbreviation"], ": ", [".name"]], "label"]],
             "WHERE": ["LIKE", [".name"], "%Dakota"]})
def _(docs):
    return [[d["abbreviation"] + ": " + d["name"]] for _, d in docs if like(d["name"], "%Dakota")]


# =============================================================================================
# CASE


@case("case_searched_with_else", "names_100", "case", ["first", "size"],
      n1ql="SELECT name.first, CASE WHEN ARRAY_COUNT(likes) = 0 THEN 'none' "
           "WHEN ARRAY_COUNT(likes) = 1 THEN 'one' ELSE 'many' END AS size FROM _ "
           "WHERE META().id <= '0000010' ORDER BY META().id", ordered=True)
def _(docs):
    def size(d):
        n = len(d["likes"])
        return "none" if n == 0 else "one" if n == 1 else "many"
    return order(_first_ten(docs), [(lambda x: x[0], False)], lambda x: [x[1]["name"]["first"], size(x[1])])


@case("case_simple", "names_100", "case", ["id", "g"],
      n1ql="SELECT META().id, CASE gender WHEN 'male' THEN 'M' WHEN 'female' THEN 'F' END AS g FROM _ "
           "WHERE contact.address.state = 'TX'")
def _(docs):
    return [[i, {"male": "M", "female": "F"}[d["gender"]]] for i, d in docs if d["contact"]["address"]["state"] == "TX"]


@case("case_without_else_is_null", "names_100", "case", ["id", "x"],
      n1ql="SELECT META().id, CASE WHEN gender = 'male' THEN 'm' END AS x FROM _ "
           "WHERE contact.address.state = 'IA'")
def _(docs):
    return [[i, _null_unless_male(d)] for i, d in docs if d["contact"]["address"]["state"] == "IA"]


@case("case_in_where", "names_100", "case", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE (CASE WHEN gender = 'male' THEN ARRAY_COUNT(likes) "
           "ELSE ARRAY_COUNT(contact.email) END) >= 2")
def _(docs):
    return count_where(docs, lambda d: (len(d["likes"]) if d["gender"] == "male" else len(d["contact"]["email"])) >= 2)


@case("json_case", "states_titlecase", "case", ["abbreviation", "kind"],
      query={"WHAT": [[".abbreviation"],
                      ["AS", ["CASE", None, ["LIKE", [".name"], "% %"], "two words", "one word"], "kind"]],
             "WHERE": ["LIKE", [".name"], "M%"]})
def _(docs):
    return [[d["abbreviation"], "two words" if " " in d["name"] else "one word"] for _, d in docs if like(d["name"], "M%")]


# =============================================================================================
# ANY / SOME / EVERY / ANY AND EVERY


@case("any_likes_climbing", "names_100", "any_every", ["id"],
      n1ql="SELECT META().id FROM _ WHERE ANY x IN likes SATISFIES x = 'climbing' END")
def _(docs):
    return ids_where(docs, lambda d: any(x == "climbing" for x in d["likes"]))


@case("some_likes_prefix", "names_100", "any_every", ["id"],
      n1ql="SELECT META().id FROM _ WHERE SOME l IN likes SATISFIES l LIKE 'sk%' END")
def _(docs):
    return ids_where(docs, lambda d: any(like(x, "sk%") for x in d["likes"]))


@case("every_likes_taxes_includes_empty", "names_100", "any_every", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE EVERY x IN likes SATISFIES x = 'taxes' END")
def _(docs):
    return count_where(docs, lambda d: all(x == "taxes" for x in d["likes"]))


@case("any_and_every_taxes_is_empty", "names_100", "any_every", ["id"],
      n1ql="SELECT META().id FROM _ WHERE ANY AND EVERY x IN likes SATISFIES x = 'taxes' END")
def _(docs):
    return ids_where(docs, lambda d: len(d["likes"]) > 0 and all(x == "taxes" for x in d["likes"]))


@case("any_and_every_like_l", "names_100", "any_every", ["id"],
      n1ql="SELECT META().id FROM _ WHERE ANY AND EVERY x IN likes SATISFIES x LIKE '%l%' END")
def _(docs):
    return ids_where(docs, lambda d: len(d["likes"]) > 0 and all(like(x, "%l%") for x in d["likes"]))


@case("every_nonempty_likes", "names_100", "any_every", ["id", "likes"],
      n1ql="SELECT META().id, likes FROM _ WHERE ARRAY_COUNT(likes) > 1 AND "
           "EVERY l IN likes SATISFIES l IN ('chess', 'boxing', 'reading', 'chatting') END")
def _(docs):
    allowed = ("chess", "boxing", "reading", "chatting")
    return [[i, d["likes"]] for i, d in docs if len(d["likes"]) > 1 and all(x in allowed for x in d["likes"])]


@case("any_nested_shape_red", "nested", "any_every", ["id"],
      n1ql="SELECT META().id FROM _ WHERE ANY shape IN shapes SATISFIES shape.color = 'red' END")
def _(docs):
    return ids_where(docs, lambda d: any(s["color"] == "red" for s in d["shapes"]))


@case("every_nested_size_includes_empty", "nested", "any_every", ["id"],
      n1ql="SELECT META().id FROM _ WHERE EVERY s IN shapes SATISFIES s.size > 2 END")
def _(docs):
    return ids_where(docs, lambda d: all(s["size"] > 2 for s in d["shapes"]))


@case("any_and_every_nested_size", "nested", "any_every", ["id"],
      n1ql="SELECT META().id FROM _ WHERE ANY AND EVERY s IN shapes SATISFIES s.size > 2 END")
def _(docs):
    return ids_where(docs, lambda d: len(d["shapes"]) > 0 and all(s["size"] > 2 for s in d["shapes"]))


@case("any_paths_san_jose", "paths", "any_every", ["id"],
      n1ql="SELECT META().id FROM _ WHERE ANY path IN paths SATISFIES path.city = 'San Jose' END")
def _(docs):
    return ids_where(docs, lambda d: any(p["city"] == "San Jose" for p in d["paths"]))


@case("any_paths_palo_alto", "paths", "any_every", ["id"],
      n1ql="SELECT META().id FROM _ WHERE ANY path IN paths SATISFIES path.city = 'Palo Alto' END")
def _(docs):
    return ids_where(docs, lambda d: any(p["city"] == "Palo Alto" for p in d["paths"]))


@case("any_in_select_column", "paths", "any_every", ["id", "sf"],
      n1ql="SELECT META().id, ANY p IN paths SATISFIES p.city LIKE 'San F%' END AS sf FROM _")
def _(docs):
    return [[i, any(like(p["city"], "San F%") for p in d["paths"])] for i, d in docs]


@case("json_any_variable_path", "paths", "any_every", ["id"],
      query={"WHAT": [META_ID], "WHERE": ["ANY", "path", [".paths"], ["=", ["?path.city"], "San Jose"]]})
def _(docs):
    return ids_where(docs, lambda d: any(p["city"] == "San Jose" for p in d["paths"]))


@case("json_every", "nested", "any_every", ["id"],
      query={"WHAT": [META_ID], "WHERE": ["EVERY", "s", [".shapes"], ["<", ["?s.size"], 9]]})
def _(docs):
    return ids_where(docs, lambda d: all(s["size"] < 9 for s in d["shapes"]))


@case("json_any_and_every", "nested", "any_every", ["id"],
      query={"WHAT": [META_ID], "WHERE": ["ANY AND EVERY", "s", [".shapes"], ["<", ["?s.size"], 9]]})
def _(docs):
    return ids_where(docs, lambda d: len(d["shapes"]) > 0 and all(s["size"] < 9 for s in d["shapes"]))


# =============================================================================================
# ORDER BY / LIMIT / OFFSET / DISTINCT


def _name(x):
    return x[1]["name"]


@case("order_by_last_limit", "names_100", "order_limit", ["first", "last"],
      n1ql="SELECT name.first, name.last FROM _ ORDER BY name.last LIMIT 10", ordered=True)
def _(docs):
    return order(docs, [(lambda x: _name(x)["last"], False)], lambda x: [_name(x)["first"], _name(x)["last"]], limit=10)


@case("order_by_desc_limit", "names_100", "order_limit", ["id", "birthday"],
      n1ql="SELECT META().id, birthday FROM _ ORDER BY birthday DESC LIMIT 5", ordered=True)
def _(docs):
    return order(docs, [(lambda x: x[1]["birthday"], True)], lambda x: [x[0], x[1]["birthday"]], limit=5)


@case("order_by_two_keys", "names_100", "order_limit", ["state", "last"],
      n1ql="SELECT contact.address.state, name.last FROM _ WHERE contact.address.state LIKE 'M%' "
           "ORDER BY contact.address.state, name.last", ordered=True)
def _(docs):
    st = lambda x: x[1]["contact"]["address"]["state"]
    return order([x for x in docs if like(st(x), "M%")], [(st, False), (lambda x: _name(x)["last"], False)],
                 lambda x: [st(x), _name(x)["last"]])


@case("order_by_desc_then_asc", "names_100", "order_limit", ["gender", "birthday"],
      n1ql="SELECT gender, birthday FROM _ WHERE birthday < '1950-01-01' ORDER BY gender DESC, birthday ASC",
      ordered=True)
def _(docs):
    return order([x for x in docs if x[1]["birthday"] < "1950-01-01"],
                 [(lambda x: x[1]["gender"], True), (lambda x: x[1]["birthday"], False)],
                 lambda x: [x[1]["gender"], x[1]["birthday"]])


@case("limit_offset", "names_100", "order_limit", ["id"],
      n1ql="SELECT META().id FROM _ ORDER BY name.first DESC, name.last LIMIT 5 OFFSET 10", ordered=True)
def _(docs):
    return order(docs, [(lambda x: _name(x)["first"], True), (lambda x: _name(x)["last"], False)],
                 lambda x: [x[0]], offset=10, limit=5)


@case("offset_without_limit", "names_100", "order_limit", ["id"],
      n1ql="SELECT META().id FROM _ ORDER BY META().id OFFSET 96", ordered=True)
def _(docs):
    return order(docs, [(lambda x: x[0], False)], lambda x: [x[0]], offset=96)


@case("limit_zero", "names_100", "order_limit", ["id"],
      n1ql="SELECT META().id FROM _ ORDER BY META().id LIMIT 0", ordered=True)
def _(docs):
    return order(docs, [(lambda x: x[0], False)], lambda x: [x[0]], limit=0)


@case("limit_parameter", "names_100", "order_limit", ["last"],
      n1ql="SELECT name.last FROM _ ORDER BY name.last DESC LIMIT $n", params={"n": 3}, ordered=True)
def _(docs):
    return order(docs, [(lambda x: _name(x)["last"], True)], lambda x: [_name(x)["last"]], limit=3)


@case("order_by_expression_ties_identical", "names_100", "order_limit", ["first"],
      n1ql="SELECT name.first FROM _ ORDER BY LENGTH(name.first) DESC, name.first LIMIT 12", ordered=True)
def _(docs):
    return order(docs, [(lambda x: len(_name(x)["first"]), True), (lambda x: _name(x)["first"], False)],
                 lambda x: [_name(x)["first"]], limit=12)


@case("order_missing_first", "names_100", "order_limit", ["p"],
      n1ql="SELECT contact.phone[0] AS p FROM _ ORDER BY contact.phone[0] LIMIT 28", ordered=True)
def _(docs):
    return order(docs, [(lambda x: prop(x[1], "contact.phone[0]"), False)],
                 lambda x: [prop(x[1], "contact.phone[0]")], limit=28)


@case("order_missing_last_descending", "names_100", "order_limit", ["p"],
      n1ql="SELECT contact.phone[1] AS p FROM _ ORDER BY contact.phone[1] DESC OFFSET 30", ordered=True)
def _(docs):
    return order(docs, [(lambda x: prop(x[1], "contact.phone[1]"), True)],
                 lambda x: [prop(x[1], "contact.phone[1]")], offset=30)


@case("order_state_ca_by_last", "names_100", "order_limit", ["id"],
      n1ql="SELECT META().id FROM _ WHERE contact.address.state = 'CA' ORDER BY name.last", ordered=True)
def _(docs):
    return order([x for x in docs if x[1]["contact"]["address"]["state"] == "CA"],
                 [(lambda x: _name(x)["last"], False)], lambda x: [x[0]])


@case("order_by_result_alias", "states_titlecase", "order_limit", ["n", "abbreviation"],
      n1ql="SELECT LENGTH(name) AS n, abbreviation FROM _ ORDER BY n DESC, abbreviation LIMIT 6", ordered=True)
def _(docs):
    return order(docs, [(lambda x: len(x[1]["name"]), True), (lambda x: x[1]["abbreviation"], False)],
                 lambda x: [len(x[1]["name"]), x[1]["abbreviation"]], limit=6)


@case("distinct_single", "names_100", "distinct", ["gender"],
      n1ql="SELECT DISTINCT gender FROM _")
def _(docs):
    return [[g] for g in sorted({d["gender"] for _, d in docs})]


@case("distinct_ordered", "names_100", "distinct", ["state"],
      n1ql="SELECT DISTINCT contact.address.state FROM _ WHERE contact.address.state LIKE 'N%' "
           "ORDER BY contact.address.state", ordered=True)
def _(docs):
    values = sorted({d["contact"]["address"]["state"] for _, d in docs if like(d["contact"]["address"]["state"], "N%")})
    return [[v] for v in values]


@case("distinct_two_columns", "names_100", "distinct", ["gender", "c"],
      n1ql="SELECT DISTINCT gender, ARRAY_COUNT(likes) AS c FROM _")
def _(docs):
    return [list(t) for t in sorted({(d["gender"], len(d["likes"])) for _, d in docs})]


@case("distinct_unnested", "names_100", "distinct", ["l"],
      n1ql="SELECT DISTINCT l FROM _ AS d UNNEST d.likes AS l ORDER BY l DESC LIMIT 5", ordered=True)
def _(docs):
    values = sorted({x for _, d in docs for x in d["likes"]}, reverse=True)
    return [[v] for v in values[:5]]


@case("json_order_limit_offset", "states_titlecase", "order_limit", ["name"],
      query={"WHAT": [[".name"]], "ORDER_BY": [["DESC", [".name"]]], "LIMIT": 4, "OFFSET": 2}, ordered=True)
def _(docs):
    return order(docs, [(lambda x: x[1]["name"], True)], lambda x: [x[1]["name"]], offset=2, limit=4)


@case("json_distinct", "students", "distinct", ["name"],
      query={"WHAT": [[".name"]], "DISTINCT": True, "ORDER_BY": [[".name"]]}, ordered=True)
def _(docs):
    return [[v] for v in sorted({d["name"] for _, d in docs})]


# =============================================================================================
# GROUP BY and aggregates


@case("count_star_all", "names_100", "aggregate", ["$1"], n1ql="SELECT COUNT(*) FROM _")
def _(docs):
    return [[len(docs)]]


@case("count_star_empty_set", "names_100", "aggregate", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE name.first = 'Nobody'")
def _(docs):
    return [[0]]


@case("count_expression_skips_missing", "names_100", "aggregate", ["all", "phones", "seconds"],
      n1ql="SELECT COUNT(*) AS `all`, COUNT(contact.phone[0]) AS phones, COUNT(contact.phone[1]) AS seconds FROM _")
def _(docs):
    return [[len(docs), sum(1 for _, d in docs if prop(d, "contact.phone[0]") is not MISSING),
             sum(1 for _, d in docs if prop(d, "contact.phone[1]") is not MISSING)]]


@case("group_by_count", "names_100", "aggregate", ["gender", "n"],
      n1ql="SELECT gender, COUNT(*) AS n FROM _ GROUP BY gender")
def _(docs):
    groups = {}
    for _, d in docs:
        groups[d["gender"]] = groups.get(d["gender"], 0) + 1
    return [[g, n] for g, n in groups.items()]


@case("group_by_having_order", "names_100", "aggregate", ["state", "n"],
      n1ql="SELECT contact.address.state, COUNT(*) AS n FROM _ GROUP BY contact.address.state "
           "HAVING COUNT(*) >= 4 ORDER BY COUNT(*) DESC, contact.address.state", ordered=True)
def _(docs):
    groups = {}
    for _, d in docs:
        s = d["contact"]["address"]["state"]
        groups[s] = groups.get(s, 0) + 1
    return order([(s, n) for s, n in groups.items() if n >= 4], [(lambda g: g[1], True), (lambda g: g[0], False)],
                 lambda g: [g[0], g[1]])


@case("group_by_sum_avg", "names_100", "aggregate", ["gender", "total", "mean"],
      n1ql="SELECT gender, SUM(ARRAY_COUNT(likes)) AS total, AVG(ARRAY_COUNT(likes)) AS mean FROM _ "
           "GROUP BY gender ORDER BY gender", ordered=True)
def _(docs):
    rows = []
    for g in sorted({d["gender"] for _, d in docs}):
        counts = [len(d["likes"]) for _, d in docs if d["gender"] == g]
        rows.append([g, sum(counts), sum(counts) / len(counts)])
    return rows


@case("group_by_min_max", "names_100", "aggregate", ["gender", "oldest", "youngest"],
      n1ql="SELECT gender, MIN(birthday) AS oldest, MAX(birthday) AS youngest FROM _ GROUP BY gender")
def _(docs):
    rows = []
    for g in {d["gender"] for _, d in docs}:
        days = [d["birthday"] for _, d in docs if d["gender"] == g]
        rows.append([g, min(days), max(days)])
    return rows


@case("aggregates_whole_collection_unnamed", "names_100", "aggregate", ["$1", "$2", "$3"],
      n1ql="SELECT MIN(name.last), MAX(name.first), SUM(LENGTH(name.first)) FROM _")
def _(docs):
    return [[min(d["name"]["last"] for _, d in docs), max(d["name"]["first"] for _, d in docs),
             sum(len(d["name"]["first"]) for _, d in docs)]]


@case("group_by_expression", "names_100", "aggregate", ["c", "n"],
      n1ql="SELECT ARRAY_COUNT(likes) AS c, COUNT(*) AS n FROM _ GROUP BY ARRAY_COUNT(likes) ORDER BY c",
      ordered=True)
def _(docs):
    groups = {}
    for _, d in docs:
        groups[len(d["likes"])] = groups.get(len(d["likes"]), 0) + 1
    return [[c, groups[c]] for c in sorted(groups)]


@case("group_by_two_keys_having", "names_100", "aggregate", ["state", "gender", "n"],
      n1ql="SELECT contact.address.state, gender, COUNT(*) AS n FROM _ "
           "GROUP BY contact.address.state, gender HAVING COUNT(*) > 2")
def _(docs):
    groups = {}
    for _, d in docs:
        k = (d["contact"]["address"]["state"], d["gender"])
        groups[k] = groups.get(k, 0) + 1
    return [[s, g, n] for (s, g), n in groups.items() if n > 2]


@case("having_on_min", "names_100", "aggregate", ["state", "first_member"],
      n1ql="SELECT contact.address.state, MIN(memberSince) AS first_member FROM _ "
           "GROUP BY contact.address.state HAVING MIN(memberSince) >= '2011-06-01'")
def _(docs):
    groups = {}
    for _, d in docs:
        s = d["contact"]["address"]["state"]
        groups[s] = min(groups.get(s, "9999"), d["memberSince"])
    return [[s, m] for s, m in groups.items() if m >= "2011-06-01"]


@case("group_by_unnested", "names_100", "aggregate", ["l", "n"],
      n1ql="SELECT l, COUNT(*) AS n FROM _ AS d UNNEST d.likes AS l GROUP BY l ORDER BY n DESC, l", ordered=True)
def _(docs):
    groups = {}
    for _, d in docs:
        for x in d["likes"]:
            groups[x] = groups.get(x, 0) + 1
    return order(list(groups.items()), [(lambda g: g[1], True), (lambda g: g[0], False)], lambda g: [g[0], g[1]])


@case("json_group_by_having", "names_100", "aggregate", ["region", "n"],
      query={"WHAT": [[".contact.region"], ["AS", ["COUNT()", ["."]], "n"]],
             "GROUP_BY": [[".contact.region"]], "HAVING": [">", ["COUNT()", ["."]], 2],
             "ORDER_BY": [[".contact.region"]]}, ordered=True)
def _(docs):
    groups = {}
    for _, d in docs:
        r = d["contact"]["region"]
        groups[r] = groups.get(r, 0) + 1
    return [[r, groups[r]] for r in sorted(groups) if groups[r] > 2]


@case("json_aggregate_nested", "nested", "aggregate", ["n", "total", "biggest"],
      query={"WHAT": [["AS", ["COUNT()", ["."]], "n"], ["AS", ["SUM()", [".shapes[0].size"]], "total"],
                      ["AS", ["MAX()", [".shapes[0].size"]], "biggest"]]})
def _(docs):
    sizes = [prop(d, "shapes[0].size") for _, d in docs if prop(d, "shapes[0].size") is not MISSING]
    return [[len(docs), sum(sizes), max(sizes)]]


# =============================================================================================
# META().id, SELECT *, alias.*, column titles


@case("select_star_default_collection", "names_100", "meta_star", ["_default"],
      n1ql="SELECT * FROM _default WHERE META().id = '0000001'")
def _(docs):
    return [[d] for i, d in docs if i == "0000001"]


@case("select_star_underscore", "nested", "meta_star", ["_"],
      n1ql="SELECT * FROM _ ORDER BY META().id", ordered=True)
def _(docs):
    return order(docs, [(lambda x: x[0], False)], lambda x: [x[1]])


@case("select_star_with_alias", "students", "meta_star", ["u"],
      n1ql="SELECT * FROM _ AS u WHERE u.name = 'Univ of Pennsylvania'")
def _(docs):
    return [[d] for _, d in docs if d["name"] == "Univ of Pennsylvania"]


@case("select_alias_star", "paths", "meta_star", ["p", "id"],
      n1ql="SELECT p.*, META(p).id FROM _default AS p ORDER BY META(p).id", ordered=True)
def _(docs):
    return order(docs, [(lambda x: x[0], False)], lambda x: [x[1], x[0]])


@case("select_whole_subobject", "names_100", "meta_star", ["id", "name", "address"],
      n1ql="SELECT META().id, name, contact.address FROM _ WHERE META().id = '0000002'")
def _(docs):
    return [[i, d["name"], d["contact"]["address"]] for i, d in docs if i == "0000002"]


@case("titles_unnamed_counted_among_unnamed", "names_100", "meta_star", ["first", "$1", "$2"],
      n1ql="SELECT name.first, UPPER(name.last), LENGTH(name.last) FROM _ WHERE META().id = '0000001'")
def _(docs):
    return [[d["name"]["first"], d["name"]["last"].upper(), len(d["name"]["last"])] for i, d in docs if i == "0000001"]


@case("titles_duplicate_property", "names_100", "meta_star", ["first", "first #2"],
      n1ql="SELECT name.first, name.first FROM _ WHERE META().id = '0000001'")
def _(docs):
    return [[d["name"]["first"], d["name"]["first"]] for i, d in docs if i == "0000001"]


@case("titles_array_count_of_property", "names_100", "meta_star", ["likes", "$1"],
      n1ql="SELECT ARRAY_COUNT(likes), ARRAY_LENGTH(likes) FROM _ WHERE META().id = '0000004'")
def _(docs):
    # ARRAY_COUNT(property) is rewritten into the property read with fl_count, so the column is
    # titled like the property (ExprNodes.cc FunctionNode::parse); ARRAY_LENGTH is not.
    return [[len(d["likes"]), len(d["likes"])] for i, d in docs if i == "0000004"]


@case("json_titles_no_from", "names_100", "meta_star", ["_doc", "name", "gender"],
      query={"WHAT": [["."], [".name"], ".gender"], "WHERE": ["=", ["._id"], "0000002"]})
def _(docs):
    return [[d, d["name"], d["gender"]] for i, d in docs if i == "0000002"]


@case("json_select_star_from_alias", "paths", "meta_star", ["doc"],
      query={"WHAT": [[".doc"]], "FROM": [{"COLLECTION": "_default", "AS": "doc"}],
             "WHERE": ["=", [".doc.paths[0].city"], "Mountain View"]})
def _(docs):
    return [[d] for _, d in docs if prop(d, "paths[0].city") == "Mountain View"]


@case("json_meta_id_alias", "states_titlecase", "meta_star", ["docid", "name"],
      query={"WHAT": [["AS", META_ID, "docid"], [".name"]], "WHERE": ["LIKE", [".name"], "W%"],
             "ORDER_BY": [["._id"]]}, ordered=True)
def _(docs):
    return order([x for x in docs if like(x[1]["name"], "W%")], [(lambda x: x[0], False)], lambda x: [x[0], x[1]["name"]])


# =============================================================================================
# Parameters


@case("param_string", "names_100", "parameter", ["id"],
      n1ql="SELECT META().id FROM _ WHERE contact.address.state = $state", params={"state": "CA"})
def _(docs):
    return ids_where(docs, lambda d: cmp(d["contact"]["address"]["state"], "=", "CA"))


@case("param_number", "names_100", "parameter", ["first"],
      n1ql="SELECT name.first FROM _ WHERE LENGTH(name.first) >= $min", params={"min": 9})
def _(docs):
    return [[d["name"]["first"]] for _, d in docs if len(d["name"]["first"]) >= 9]


@case("param_like_pattern", "states_titlecase", "parameter", ["name"],
      n1ql="SELECT name FROM _ WHERE name LIKE $pattern ORDER BY name", params={"pattern": "%ia"}, ordered=True)
def _(docs):
    return order([x for x in docs if like(x[1]["name"], "%ia")], [(lambda x: x[1]["name"], False)], lambda x: [x[1]["name"]])


@case("param_in_select", "names_100", "parameter", ["greeting"],
      n1ql="SELECT $hello || name.first AS greeting FROM _ WHERE META().id = '0000003'", params={"hello": "Hi "})
def _(docs):
    return [["Hi " + d["name"]["first"]] for i, d in docs if i == "0000003"]


@case("param_null_binds_as_missing", "names_100", "parameter", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE $p IS MISSING", params={"p": None})
def _(docs):
    # A JSON-null binding is skipped, so the parameter stays SQL NULL, i.e. MISSING
    # (SQLiteQuery.cc SQLiteQueryRunner::bindParameters: `case kNull: break;`).
    return [[len(docs)]]


@case("param_unbound_is_missing", "names_100", "parameter", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE $nothing IS MISSING")
def _(docs):
    # "Some query parameters were left unbound and will have value `MISSING`" (SQLiteQuery.cc).
    return [[len(docs)]]


@case("json_param", "names_100", "parameter", ["last"],
      query={"WHAT": [[".name.last"]], "WHERE": ["=", [".gender"], ["$g"]], "ORDER_BY": [[".name.last"]],
             "LIMIT": ["$lim"]},
      params={"g": "female", "lim": 4}, ordered=True)
def _(docs):
    return order([x for x in docs if x[1]["gender"] == "female"], [(lambda x: _name(x)["last"], False)],
                 lambda x: [_name(x)["last"]], limit=4)


@case("json_param_array_in", "names_100", "parameter", ["id"],
      query={"WHAT": [META_ID], "WHERE": ["IN", [".contact.address.state"], ["$states"]]},
      params={"states": ["VT", "NH", "ME"]})
def _(docs):
    # `x IN $array` (not a literal list) is array_contains($array, x).
    return ids_where(docs, lambda d: d["contact"]["address"]["state"] in ("VT", "NH", "ME"))


# =============================================================================================
# Functions


def _ids(docs, wanted):
    return [(i, d) for i, d in docs if i in wanted]


_SOME = ("0000001", "0000004", "0000015", "0000085")


@case("fn_lower_upper_length", "names_100", "function", ["id", "lo", "up", "len"],
      n1ql="SELECT META().id, LOWER(name.first) AS lo, UPPER(name.last) AS up, LENGTH(contact.address.city) AS len "
           "FROM _ WHERE META().id IN ('0000001', '0000004', '0000015', '0000085')")
def _(docs):
    return [[i, d["name"]["first"].lower(), d["name"]["last"].upper(), len(d["contact"]["address"]["city"])]
            for i, d in _ids(docs, _SOME)]


@case("fn_lower_in_where", "names_100", "function", ["id"],
      n1ql="SELECT META().id FROM _ WHERE LOWER(name.first) = $n", params={"n": "jasper"})
def _(docs):
    return ids_where(docs, lambda d: d["name"]["first"].lower() == "jasper")


@case("fn_length_missing_and_null", "names_100", "function", ["id", "a", "b"],
      n1ql="SELECT META().id, LENGTH(contact.phone[0]) AS a, LENGTH(likes) AS b FROM _ "
           "WHERE META().id IN ('0000003', '0000004')")
def _(docs):
    # MISSING passes through; a non-string gives JSON null.
    return [[i, MISSING if prop(d, "contact.phone[0]") is MISSING else len(prop(d, "contact.phone[0]")), None]
            for i, d in _ids(docs, ("0000003", "0000004"))]


@case("fn_trim", "names_100", "function", ["t", "l", "r"],
      n1ql="SELECT TRIM('  ' || name.first || '  ') AS t, LTRIM('  ' || name.first) AS l, "
           "RTRIM(name.last || '   ') AS r FROM _ WHERE META().id = '0000001'")
def _(docs):
    return [[d["name"]["first"], d["name"]["first"], d["name"]["last"]] for i, d in docs if i == "0000001"]


@case("contains_case_sensitive", "names_100", "function", ["id"],
      n1ql="SELECT META().id FROM _ WHERE CONTAINS(name.first, 'Jen')")
def _(docs):
    return ids_where(docs, lambda d: "Jen" in d["name"]["first"])


@case("fn_contains_column", "names_100", "function", ["last", "er"],
      n1ql="SELECT name.last, CONTAINS(name.last, 'er') AS er FROM _ WHERE name.last LIKE 'H%'")
def _(docs):
    return [[d["name"]["last"], "er" in d["name"]["last"]] for _, d in docs if like(d["name"]["last"], "H%")]


@case("fn_round_floor_ceil_abs", "names_100", "function", ["first", "r", "r2", "f", "c", "a"],
      n1ql="SELECT name.first, ROUND(LENGTH(name.first) / 3.0) AS r, ROUND(LENGTH(name.first) / 3.0, 2) AS r2, "
           "FLOOR(LENGTH(name.first) / 4.0) AS f, CEIL(LENGTH(name.first) / 4.0) AS c, "
           "ABS(ARRAY_COUNT(likes) - 2) AS a FROM _ WHERE META().id <= '0000010' ORDER BY META().id", ordered=True)
def _(docs):
    def row(x):
        n = len(x[1]["name"]["first"])
        third = n / 3.0
        return [x[1]["name"]["first"], c_round(third), c_round(third * 100.0) / 100.0,
                float(math.floor(n / 4.0)), float(math.ceil(n / 4.0)),
                float(abs(len(x[1]["likes"]) - 2))]
    return order(_first_ten(docs), [(lambda x: x[0], False)], row)


@case("fn_array_length_count_contains", "names_100", "function", ["id", "emails", "phones", "chess"],
      n1ql="SELECT META().id, ARRAY_LENGTH(contact.email) AS emails, ARRAY_COUNT(contact.phone) AS phones, "
           "ARRAY_CONTAINS(likes, 'chess') AS chess FROM _ WHERE contact.address.state = 'NY'")
def _(docs):
    return [[i, len(d["contact"]["email"]), len(d["contact"]["phone"]), "chess" in d["likes"]]
            for i, d in docs if d["contact"]["address"]["state"] == "NY"]


@case("fn_array_functions_on_missing", "names_100", "function", ["c", "l"],
      n1ql="SELECT ARRAY_COUNT(contact.fax) AS c, ARRAY_LENGTH(contact.fax) AS l FROM _ WHERE META().id = '0000001'")
def _(docs):
    return [[MISSING, MISSING]]


@case("fn_ifmissing_ifnull", "names_100", "function", ["id", "a", "b", "c"],
      n1ql="SELECT META().id, IFMISSING(contact.phone[0], 'none') AS a, IFNULL(contact.phone[0], 'none') AS b, "
           "IFMISSINGORNULL(contact.phone[0], 'none') AS c FROM _ WHERE META().id IN ('0000003', '0000004')")
def _(docs):
    def row(i, d):
        p = prop(d, "contact.phone[0]")
        return [i, "none" if p is MISSING else p,
                p,  # IFNULL passes MISSING through
                "none" if p in (MISSING, None) else p]
    return [row(i, d) for i, d in _ids(docs, ("0000003", "0000004"))]


@case("fn_ifnull_of_null", "names_100", "function", ["x", "y"],
      n1ql="SELECT IFNULL(NULL, 'fallback') AS x, IFMISSING(NULL, 'fallback') AS y FROM _ WHERE META().id = '0000001'")
def _(docs):
    return [["fallback", None]]


@case("fn_type_names", "names_100", "function", ["a", "b", "c", "d", "e"],
      n1ql="SELECT TYPE(name) AS a, TYPE(likes) AS b, TYPE(name.first) AS c, TYPE(ARRAY_COUNT(likes)) AS d, "
           "TYPE(name.middle) AS e FROM _ WHERE META().id = '0000001'")
def _(docs):
    return [["object", "array", "string", "number", MISSING]]


@case("fn_is_type_predicates", "names_100", "function", ["s", "n", "a", "o", "m"],
      n1ql="SELECT ISSTRING(name.first) AS s, ISNUMBER(name.first) AS n, ISARRAY(likes) AS a, "
           "ISOBJECT(contact) AS o, ISSTRING(name.middle) AS m FROM _ WHERE META().id = '0000001'")
def _(docs):
    return [[True, False, True, True, MISSING]]


@case("fn_isnumber_in_where", "nested", "function", ["id"],
      n1ql="SELECT META().id FROM _ WHERE ISNUMBER(shapes[1].size)")
def _(docs):
    return ids_where(docs, lambda d: None if prop(d, "shapes[1].size") is MISSING else is_num(prop(d, "shapes[1].size")))


@case("fn_tostring_tonumber", "names_100", "function", ["id", "s", "r", "sum"],
      n1ql="SELECT META().id, TOSTRING(ARRAY_COUNT(likes)) AS s, TONUMBER(contact.region) AS r, "
           "TONUMBER(contact.region) + 1 AS `sum` FROM _ WHERE META().id IN ('0000001', '0000004', '0000015', '0000085')")
def _(docs):
    return [[i, str(len(d["likes"])), int(d["contact"]["region"]), int(d["contact"]["region"]) + 1]
            for i, d in _ids(docs, _SOME)]


@case("fn_regexp_like_anchored", "names_100", "function", ["first"],
      n1ql="SELECT name.first FROM _ WHERE REGEXP_LIKE(name.first, '^J.*[nr]$')")
def _(docs):
    return [[d["name"]["first"]] for _, d in docs if re.search(r"^J.*[nr]$", d["name"]["first"])]


@case("fn_regexp_contains", "names_100", "function", ["last"],
      n1ql="SELECT name.last FROM _ WHERE REGEXP_CONTAINS(name.last, 'ee|oo')")
def _(docs):
    return [[d["name"]["last"]] for _, d in docs if re.search(r"ee|oo", d["name"]["last"])]


@case("fn_regexp_contains_column", "names_100", "function", ["id", "r"],
      n1ql="SELECT META().id, REGEXP_CONTAINS(contact.email[1], '^[a-z]+@') AS r FROM _ "
           "WHERE META().id <= '0000010'")
def _(docs):
    def r(d):
        e = prop(d, "contact.email[1]")
        return MISSING if e is MISSING else re.search(r"^[a-z]+@", e) is not None
    return [[i, r(d)] for i, d in _first_ten(docs)]


@case("json_functions", "states_titlecase", "function", ["$1", "$2", "$3"],
      query={"WHAT": [["UPPER()", [".name"]], ["LENGTH()", [".name"]], ["CONTAINS()", [".name"], " "]],
             "WHERE": ["LIKE", [".abbreviation"], "W%"]})
def _(docs):
    return [[d["name"].upper(), len(d["name"]), " " in d["name"]] for _, d in docs if like(d["abbreviation"], "W%")]


# =============================================================================================
# Dates (all inputs carry an explicit zone, or the function ignores zones)


@case("date_str_to_millis", "names_100", "date", ["id", "ms"],
      n1ql="SELECT META().id, STR_TO_MILLIS(birthday || 'T00:00:00Z') AS ms FROM _ WHERE META().id <= '0000010'")
def _(docs):
    return [[i, epoch_millis(d["birthday"])] for i, d in _first_ten(docs)]


@case("date_str_to_millis_where", "names_100", "date", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ WHERE STR_TO_MILLIS(birthday || 'T00:00:00Z') < 0")
def _(docs):
    return count_where(docs, lambda d: epoch_millis(d["birthday"]) < 0)


@case("date_millis_to_utc", "names_100", "date", ["id", "next"],
      n1ql="SELECT META().id, MILLIS_TO_UTC(STR_TO_MILLIS(memberSince || 'T00:00:00Z') + 86400000) AS `next` "
           "FROM _ WHERE META().id <= '0000010'")
def _(docs):
    return [[i, utc_text(epoch_millis(d["memberSince"]) + 86400000)] for i, d in _first_ten(docs)]


@case("date_millis_to_utc_with_millis", "names_100", "date", ["t"],
      n1ql="SELECT MILLIS_TO_UTC(STR_TO_MILLIS(birthday || 'T00:00:00Z') + 45296789) AS t FROM _ "
           "WHERE META().id = '0000001'")
def _(docs):
    return [[utc_text(epoch_millis(d["birthday"]) + 45296789)] for i, d in docs if i == "0000001"]


@case("date_diff_years", "names_100", "date", ["id", "age_at_join"],
      n1ql="SELECT META().id, DATE_DIFF_STR(memberSince, birthday, 'year') AS age_at_join FROM _ "
           "WHERE META().id <= '0000010'")
def _(docs):
    # The difference of the calendar years, not completed years.
    return [[i, year_of(d["memberSince"]) - year_of(d["birthday"])] for i, d in _first_ten(docs)]


@case("date_diff_years_negative", "names_100", "date", ["d"],
      n1ql="SELECT DATE_DIFF_STR(birthday, memberSince, 'year') AS d FROM _ WHERE META().id = '0000002'")
def _(docs):
    return [[year_of(d["birthday"]) - year_of(d["memberSince"])] for i, d in docs if i == "0000002"]


@case("date_diff_days", "names_100", "date", ["id", "days"],
      n1ql="SELECT META().id, DATE_DIFF_STR(memberSince, birthday, 'day') AS days FROM _ WHERE META().id <= '0000010'")
def _(docs):
    return [[i, (datetime.date.fromisoformat(d["memberSince"]) - datetime.date.fromisoformat(d["birthday"])).days]
            for i, d in _first_ten(docs)]


@case("date_add_years", "names_100", "date", ["id", "d"],
      n1ql="SELECT META().id, DATE_ADD_STR(birthday || 'T00:00:00Z', 1, 'year') AS d FROM _ WHERE META().id <= '0000010'")
def _(docs):
    def plus_year(text):
        y, m, day = map(int, text.split("-"))
        assert (m, day) != (2, 29)
        return "%04d-%02d-%02dT00:00:00Z" % (y + 1, m, day)
    return [[i, plus_year(d["birthday"])] for i, d in _first_ten(docs)]


@case("date_add_days", "names_100", "date", ["id", "d"],
      n1ql="SELECT META().id, DATE_ADD_STR(memberSince || 'T00:00:00Z', 30, 'day') AS d FROM _ WHERE META().id <= '0000010'")
def _(docs):
    return [[i, (datetime.date.fromisoformat(d["memberSince"]) + datetime.timedelta(days=30)).isoformat() + "T00:00:00Z"]
            for i, d in _first_ten(docs)]


# =============================================================================================
# Collation


@case("collate_nocase_equality", "names_100", "collation", ["id"],
      n1ql="SELECT META().id FROM _ WHERE (name.first = 'lue') COLLATE NOCASE")
def _(docs):
    return ids_where(docs, lambda d: ascii_nocase(d["name"]["first"]) == "lue")


@case("binary_equality_is_case_sensitive", "names_100", "collation", ["id"],
      n1ql="SELECT META().id FROM _ WHERE name.first = 'lue'")
def _(docs):
    return ids_where(docs, lambda d: d["name"]["first"] == "lue")


@case("collate_unicode_nodiac_param", "names_100", "collation", ["id"],
      n1ql="SELECT META().id FROM _ WHERE (name.first = $n) COLLATE (UNICODE NODIAC)", params={"n": "Lué"})
def _(docs):
    return ids_where(docs, lambda d: no_diacritics(d["name"]["first"]) == no_diacritics("Lué"))


@case("collate_unicode_nodiac_keeps_case", "names_100", "collation", ["id"],
      n1ql="SELECT META().id FROM _ WHERE (name.first = $n) COLLATE (UNICODE NODIAC)", params={"n": "lué"})
def _(docs):
    return ids_where(docs, lambda d: no_diacritics(d["name"]["first"]) == no_diacritics("lué"))


@case("collate_unicode_nocase_nodiac", "names_100", "collation", ["id"],
      n1ql="SELECT META().id FROM _ WHERE (name.first = $n) COLLATE (UNICODE NOCASE NODIAC)", params={"n": "JASPÉR"})
def _(docs):
    return ids_where(docs, lambda d: unicode_primary(d["name"]["first"]) == unicode_primary("JASPÉR"))


@case("json_contains_collate_everything_insensitive", "names_100", "collation", ["id"],
      query={"WHAT": [META_ID],
             "WHERE": ["COLLATE", {"UNICODE": True, "CASE": False, "DIAC": False}, ["CONTAINS()", [".name.first"], "jén"]]})
def _(docs):
    return ids_where(docs, lambda d: unicode_primary("jén") in unicode_primary(d["name"]["first"]))


_MN_LOWER = "(CASE WHEN abbreviation LIKE 'M%' OR abbreviation LIKE 'N%' THEN LOWER(name) ELSE name END)"


def _mn_lower(x):
    """The expression above: states whose abbreviation starts with M or N in lower case."""
    return x[1]["name"].lower() if x[1]["abbreviation"][0] in "MN" else x[1]["name"]


# A COLLATE applies to the first comparison it finds inside its operand (ExprNodes.cc
# CollateNode::parse / OpNode ctor), so `(CASE WHEN a LIKE .. END) COLLATE NOCASE` would collate
# the LIKE, not the ordering. The cases below collate the result alias instead.
@case("order_collate_nocase", "states_titlecase", "collation", ["s"],
      n1ql="SELECT %s AS s FROM _ WHERE name < 'P' ORDER BY s COLLATE NOCASE" % _MN_LOWER, ordered=True)
def _(docs):
    chosen = [x for x in docs if x[1]["name"] < "P"]
    keys = [ascii_nocase(_mn_lower(x)) for x in chosen]
    assert len(set(keys)) == len(keys)
    return order(chosen, [(lambda x: ascii_nocase(_mn_lower(x)), False)], lambda x: [_mn_lower(x)])


@case("order_binary_uppercase_first", "states_titlecase", "collation", ["s"],
      n1ql="SELECT %s AS s FROM _ WHERE name < 'P' ORDER BY s" % _MN_LOWER, ordered=True)
def _(docs):
    return order([x for x in docs if x[1]["name"] < "P"], [(_mn_lower, False)], lambda x: [_mn_lower(x)])


@case("json_order_collate_unicode_nocase", "states_titlecase", "collation", ["s"],
      query={"WHAT": [["AS", ["CASE", None, ["LIKE", [".abbreviation"], "M%"], ["LOWER()", [".name"]], [".name"]], "s"]],
             "WHERE": ["AND", [">=", [".name"], "K"], ["<", [".name"], "O"]],
             "ORDER_BY": [["COLLATE", {"UNICODE": True, "CASE": False}, [".s"]]]},
      ordered=True)
def _(docs):
    def s(x):
        return x[1]["name"].lower() if x[1]["abbreviation"][0] == "M" else x[1]["name"]
    chosen = [x for x in docs if "K" <= x[1]["name"] < "O"]
    # Unicode primary order of ASCII letters and spaces: letters regardless of case; the only
    # space-versus-letter comparisons here ("North Carolina"/"Northern ...") order the same
    # whether spaces are significant or ignorable.
    assert all(re.fullmatch(r"[A-Za-z ]+", s(x)) for x in chosen)
    keys = [unicode_primary(s(x)) for x in chosen]
    assert len(set(keys)) == len(keys)
    return order(chosen, [(lambda x: unicode_primary(s(x)), False)], lambda x: [s(x)])


# =============================================================================================
# UNNEST


@case("unnest_likes", "names_100", "unnest", ["id", "l"],
      n1ql="SELECT META(d).id, l FROM _ AS d UNNEST d.likes AS l WHERE d.contact.address.state = 'NY'")
def _(docs):
    return [[i, x] for i, d in docs if d["contact"]["address"]["state"] == "NY" for x in d["likes"]]


@case("unnest_filter_on_item", "names_100", "unnest", ["first", "last"],
      n1ql="SELECT d.name.first, d.name.last FROM _ AS d UNNEST d.likes AS l WHERE l = 'chess'")
def _(docs):
    return [[d["name"]["first"], d["name"]["last"]] for _, d in docs for x in d["likes"] if x == "chess"]


@case("unnest_objects", "nested", "unnest", ["id", "color", "size"],
      n1ql="SELECT META(d).id, s.color, s.size FROM _ AS d UNNEST d.shapes AS s WHERE s.size > 2")
def _(docs):
    return [[i, s["color"], s["size"]] for i, d in docs for s in d["shapes"] if s["size"] > 2]


@case("unnest_nested_students", "students", "unnest", ["univ", "student", "interest"],
      n1ql="SELECT u.name AS univ, s.id AS student, i AS interest FROM _ AS u "
           "UNNEST u.students AS s UNNEST s.interests AS i")
def _(docs):
    return [[u["name"], s["id"], i] for _, u in docs for s in u["students"] for i in s["interests"]]


@case("unnest_nested_students_filtered", "students", "unnest", ["univ", "student", "class"],
      n1ql="SELECT u.name AS univ, s.id AS student, s.class FROM _ AS u "
           "UNNEST u.students AS s UNNEST s.interests AS i WHERE i = 'violin' ORDER BY u.name, s.id", ordered=True)
def _(docs):
    rows = [(u["name"], s["id"], s["class"]) for _, u in docs for s in u["students"] for i in s["interests"] if i == "violin"]
    return order(rows, [(lambda r: r[0], False), (lambda r: r[1], False)], lambda r: list(r))


@case("unnest_nested_path_students2", "students2", "unnest", ["student", "interest"],
      n1ql="SELECT s.id AS student, i AS interest FROM _ AS u UNNEST u.students AS s UNNEST s.extra.interests AS i "
           "WHERE u.name = 'Univ of Michigan'")
def _(docs):
    return [[s["id"], i] for _, u in docs if u["name"] == "Univ of Michigan" for s in u["students"]
            for i in s["extra"]["interests"]]


@case("unnest_group_by_nested", "students", "unnest", ["interest", "n"],
      n1ql="SELECT i AS interest, COUNT(*) AS n FROM _ AS u UNNEST u.students AS s UNNEST s.interests AS i "
           "GROUP BY i HAVING COUNT(*) > 1")
def _(docs):
    groups = {}
    for _, u in docs:
        for s in u["students"]:
            for i in s["interests"]:
                groups[i] = groups.get(i, 0) + 1
    return [[i, n] for i, n in groups.items() if n > 1]


@case("unnest_profiles_phones", "profiles_100", "unnest", ["pid", "city", "ptype", "numbers", "preferred"],
      n1ql="SELECT prof.pid, c.address.city, p.type AS ptype, p.numbers, p.preferred FROM _ AS prof "
           "UNNEST prof.contacts AS c UNNEST c.phones AS p WHERE prof.pid IN ('p-0001', 'p-0004')")
def _(docs):
    return [[d["pid"], c["address"]["city"], p["type"], p["numbers"], p["preferred"]]
            for _, d in docs if d["pid"] in ("p-0001", "p-0004") for c in d["contacts"] for p in c["phones"]]


@case("unnest_profiles_boolean_filter", "profiles_100", "unnest", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _ AS prof UNNEST prof.contacts AS c UNNEST c.phones AS p "
           "WHERE p.preferred = TRUE AND p.type = 'home'")
def _(docs):
    return [[sum(1 for _, d in docs for c in d["contacts"] for p in c["phones"]
                 if p["preferred"] is True and p["type"] == "home")]]


@case("unnest_profiles_state_valued", "profiles_100", "unnest", ["pid", "city", "state"],
      n1ql="SELECT p.pid, c.address.city, c.address.state FROM _ AS p UNNEST p.contacts AS c "
           "WHERE c.address.state IS VALUED AND p.pid <= 'p-0003'")
def _(docs):
    return [[d["pid"], c["address"]["city"], c["address"]["state"]] for _, d in docs if d["pid"] <= "p-0003"
            for c in d["contacts"] if prop(c, "address.state") not in (MISSING, None)]


@case("json_unnest", "nested", "unnest", ["color"],
      query={"WHAT": [[".s.color"]],
             "FROM": [{"COLLECTION": "_default", "AS": "d"}, {"UNNEST": [".d.shapes"], "AS": "s"}],
             "WHERE": ["<", [".s.size"], 4]})
def _(docs):
    return [[s["color"]] for _, d in docs for s in d["shapes"] if s["size"] < 4]


# =============================================================================================
# JOIN


def _state(d):
    return d["contact"]["address"]["state"]


@case("join_inner_same_state", "names_100", "join", ["a", "b"],
      n1ql="SELECT a.name.last AS a, b.name.last AS b FROM _default AS a JOIN _default AS b "
           "ON a.contact.address.state = b.contact.address.state AND META(a).id < META(b).id "
           "WHERE a.contact.address.state IN ('KS', 'MO')")
def _(docs):
    return [[a["name"]["last"], b["name"]["last"]] for ia, a in docs for ib, b in docs
            if _state(a) == _state(b) and ia < ib and _state(a) in ("KS", "MO")]


@case("join_duplicate_titles", "names_100", "join", ["first", "first #2"],
      n1ql="SELECT a.name.first, b.name.first FROM _default AS a JOIN _default AS b "
           "ON a.contact.address.state = b.contact.address.state AND META(a).id != META(b).id "
           "WHERE a.contact.address.state = 'NJ'")
def _(docs):
    return [[a["name"]["first"], b["name"]["first"]] for ia, a in docs for ib, b in docs
            if _state(a) == _state(b) and ia != ib and _state(a) == "NJ"]


@case("join_left_outer_unmatched_missing", "names_100", "join", ["aid", "bid", "other"],
      n1ql="SELECT META(a).id AS aid, META(b).id AS bid, b.name.first AS other FROM _default AS a "
           "LEFT OUTER JOIN _default AS b ON a.contact.address.state = b.contact.address.state "
           "AND META(a).id != META(b).id WHERE a.contact.address.city LIKE 'S%'")
def _(docs):
    rows = []
    for ia, a in docs:
        if not like(a["contact"]["address"]["city"], "S%"):
            continue
        matches = [(ib, b) for ib, b in docs if _state(a) == _state(b) and ia != ib]
        if matches:
            rows += [[ia, ib, b["name"]["first"]] for ib, b in matches]
        else:
            rows.append([ia, MISSING, MISSING])
    return rows


@case("join_left_outer_count", "names_100", "join", ["n"],
      n1ql="SELECT COUNT(*) AS n FROM _default AS a LEFT JOIN _default AS b "
           "ON a.contact.address.state = b.contact.address.state AND META(a).id < META(b).id")
def _(docs):
    total = 0
    for ia, a in docs:
        total += max(1, sum(1 for ib, b in docs if _state(a) == _state(b) and ia < ib))
    return [[total]]


@case("json_join", "names_100", "join", ["x", "y"],
      query={"WHAT": [["AS", [".a.name.first"], "x"], ["AS", [".b.name.first"], "y"]],
             "FROM": [{"COLLECTION": "_default", "AS": "a"},
                      {"COLLECTION": "_default", "AS": "b", "JOIN": "INNER",
                       "ON": ["AND", ["=", [".a.memberSince"], [".b.memberSince"]], ["!=", [".a._id"], [".b._id"]]]}]})
def _(docs):
    return [[a["name"]["first"], b["name"]["first"]] for ia, a in docs for ib, b in docs
            if a["memberSince"] == b["memberSince"] and ia != ib]


@case("json_join_left_outer", "names_100", "join", ["x", "y"],
      query={"WHAT": [["AS", [".a.name.last"], "x"], ["AS", [".b.name.last"], "y"]],
             "FROM": [{"COLLECTION": "_default", "AS": "a"},
                      {"COLLECTION": "_default", "AS": "b", "JOIN": "LEFT OUTER",
                       "ON": ["AND", ["=", [".a.contact.address.city"], [".b.contact.address.city"]],
                              ["<", [".a._id"], [".b._id"]]]}],
             "WHERE": ["IN", [".a.contact.address.state"], ["[]", "MO", "AL"]]})
def _(docs):
    rows = []
    for ia, a in docs:
        if _state(a) not in ("MO", "AL"):
            continue
        matches = [b for ib, b in docs if a["contact"]["address"]["city"] == b["contact"]["address"]["city"] and ia < ib]
        rows += [[a["name"]["last"], b["name"]["last"]] for b in matches] or [[a["name"]["last"], MISSING]]
    return rows


# =============================================================================================
# Cases that need an index (value/array: same rows with and without it; MATCH needs its index)


def _fts_ids(docs, fields, term, only=None):
    """Documents with `term` as a token of one of `fields` (or of `only`, when given). The check
    below guarantees no other token shares the term as a prefix, so stemming cannot matter."""
    term = term.lower()
    for _, d in docs:
        for f in fields:
            for t in tokens(prop(d, f)):
                assert t == term or not t.startswith(term), (t, term)
    return [[i] for i, d in docs if any(term in tokens(prop(d, f)) for f in (only or fields))]


_STREET = [".contact.address.street"]
_ADDRESS = [[".contact.address.street"], [".contact.address.city"], [".contact.address.state"]]
_ADDRESS_FIELDS = ["contact.address.street", "contact.address.city", "contact.address.state"]


@case("fts_street_hwy", "names_100", "index_fts", ["id"],
      n1ql="SELECT META().id FROM _ WHERE MATCH(byStreet, 'Hwy')",
      index={"kind": "fts", "name": "byStreet", "expressions": [_STREET]})
def _(docs):
    return _fts_ids(docs, ["contact.address.street"], "Hwy")


@case("fts_street_lowercase_term", "names_100", "index_fts", ["id"],
      n1ql="SELECT META().id FROM _ WHERE MATCH(byStreet, 'loop')",
      index={"kind": "fts", "name": "byStreet", "expressions": [_STREET]})
def _(docs):
    return _fts_ids(docs, ["contact.address.street"], "loop")


@case("fts_address_santa", "names_100", "index_fts", ["id"],
      query={"WHAT": [META_ID], "WHERE": ["MATCH()", "byAddress", "Santa"]},
      index={"kind": "fts", "name": "byAddress", "expressions": _ADDRESS})
def _(docs):
    return _fts_ids(docs, _ADDRESS_FIELDS, "Santa")


@case("fts_address_street_column_santa", "names_100", "index_fts", ["id"],
      query={"WHAT": [META_ID], "WHERE": ["MATCH()", "byAddress", "contact.address.street:Santa"]},
      index={"kind": "fts", "name": "byAddress", "expressions": _ADDRESS})
def _(docs):
    return _fts_ids(docs, _ADDRESS_FIELDS, "Santa", only=["contact.address.street"])


@case("fts_address_street_santa_or_saint", "names_100", "index_fts", ["id"],
      query={"WHAT": [META_ID], "WHERE": ["MATCH()", "byAddress", "contact.address.street:Santa OR Saint"]},
      index={"kind": "fts", "name": "byAddress", "expressions": _ADDRESS})
def _(docs):
    santa = {r[0] for r in _fts_ids(docs, _ADDRESS_FIELDS, "Santa", only=["contact.address.street"])}
    saint = {r[0] for r in _fts_ids(docs, _ADDRESS_FIELDS, "Saint")}
    return [[i] for i in sorted(santa | saint)]


@case("fts_with_other_conditions", "names_100", "index_fts", ["id", "first"],
      n1ql="SELECT META().id, name.first FROM _ WHERE gender = 'male' AND MATCH(byCity, 'Santa') "
           "AND name.first = 'Cleveland'",
      index={"kind": "fts", "name": "byCity", "expressions": [[".contact.address.city"]]})
def _(docs):
    santa = {r[0] for r in _fts_ids(docs, ["contact.address.city"], "Santa")}
    return [[i, d["name"]["first"]] for i, d in docs if i in santa and d["gender"] == "male"
            and d["name"]["first"] == "Cleveland"]


@case("value_index_first_length", "names_100", "index_value", ["id"],
      query={"WHAT": [META_ID], "WHERE": ["=", ["LENGTH()", [".name.first"]], 9]},
      index={"kind": "value", "name": "firstLength", "expressions": [["LENGTH()", [".name.first"]]]})
def _(docs):
    return ids_where(docs, lambda d: len(d["name"]["first"]) == 9)


@case("value_index_state_order", "names_100", "index_value", ["last", "city"],
      n1ql="SELECT name.last, contact.address.city FROM _ WHERE contact.address.state = 'MO' ORDER BY name.last",
      index={"kind": "value", "name": "byState", "expressions": [[".contact.address.state"]]}, ordered=True)
def _(docs):
    return order([x for x in docs if _state(x[1]) == "MO"], [(lambda x: _name(x)["last"], False)],
                 lambda x: [_name(x)["last"], x[1]["contact"]["address"]["city"]])


@case("value_index_range", "names_100", "index_value", ["first", "birthday"],
      n1ql="SELECT name.first, birthday FROM _ WHERE birthday >= '1990-01-01' ORDER BY birthday", ordered=True,
      index={"kind": "value", "name": "byBirthday", "expressions": [[".birthday"]]})
def _(docs):
    return order([x for x in docs if x[1]["birthday"] >= "1990-01-01"], [(lambda x: x[1]["birthday"], False)],
                 lambda x: [_name(x)["first"], x[1]["birthday"]])


@case("array_index_unnest_state", "profiles_100", "index_array", ["pid", "city", "state"],
      n1ql="SELECT p.pid, c.address.city, c.address.state FROM _ AS p UNNEST p.contacts AS c "
           "WHERE c.address.state = 'CA'",
      index={"kind": "array", "name": "contactStates", "unnestPath": "contacts", "expressions": [[".address.state"]]})
def _(docs):
    return [[d["pid"], c["address"]["city"], c["address"]["state"]] for _, d in docs for c in d["contacts"]
            if c["address"]["state"] == "CA"]


@case("array_index_nested_unnest", "profiles_100", "index_array", ["pid", "ptype"],
      n1ql="SELECT prof.pid, p.type AS ptype FROM _ AS prof UNNEST prof.contacts AS c UNNEST c.phones AS p "
           "WHERE p.type = 'mobile' AND prof.pid <= 'p-0005'",
      index={"kind": "array", "name": "phoneTypes", "unnestPath": "contacts[].phones", "expressions": [[".type"]]})
def _(docs):
    return [[d["pid"], p["type"]] for _, d in docs if d["pid"] <= "p-0005" for c in d["contacts"] for p in c["phones"]
            if p["type"] == "mobile"]


# =============================================================================================
# Output


def encode(value):
    if value is MISSING:
        return {"$missing": True}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


def canonical(row):
    return json.dumps(encode(row), sort_keys=True, ensure_ascii=False)


def derive():
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    catalog = []
    for c in CASES:
        rows = c["fn"](DATASETS[c["dataset"]])
        for row in rows:
            assert isinstance(row, list) and len(row) == len(c["columns"]), (c["name"], row)
        if not c["ordered"]:
            rows = sorted(rows, key=canonical)  # a multiset: any stable order will do
        anchor = LITECORE_ANCHORS.get(c["name"])
        if anchor is not None:
            got = [r[0] for r in rows]
            assert (got if c["ordered"] else sorted(got)) == anchor, (c["name"], got, anchor)
        entry = {k: v for k, v in c.items() if k not in ("fn", "columns")}
        entry["expected"] = {"columns": c["columns"], "rows": encode(rows)}
        catalog.append(entry)
    # c4QueryTest.cc checks the first four documents whose phone[0] IS MISSING:
    first_missing = [r[0] for r in next(c for c in catalog if c["name"] == "is_missing_phone0")["expected"]["rows"]][:4]
    assert first_missing == ["0000004", "0000006", "0000008", "0000015"], first_missing
    every = next(c for c in catalog if c["name"] == "every_likes_taxes_includes_empty")
    assert every["expected"]["rows"] == [[42]], every  # c4QueryTest.cc: 42 results
    return catalog


def render(catalog):
    """JSON with sorted keys, one case field per line and one result row per line."""
    def compact(value):
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))

    blocks = []
    for entry in catalog:
        fields = []
        for key in sorted(entry):
            if key == "expected":
                rows = entry[key]["rows"]
                text = '{"columns": %s, "rows": [' % compact(entry[key]["columns"])
                text += "".join("\n    " + compact(r) + ("," if i < len(rows) - 1 else "") for i, r in enumerate(rows))
                text += ("\n  ]}" if rows else "]}")
            else:
                text = compact(entry[key])
            fields.append('  "%s": %s' % (key, text))
        blocks.append(" {\n" + ",\n".join(fields) + "\n }")
    text = "[\n" + ",\n".join(blocks) + "\n]\n"
    assert json.loads(text) == json.loads(json.dumps(catalog)), "render changed the catalog"
    return text


def main():
    text = render(derive())
    if "--check" in sys.argv[1:]:
        with open(OUTPUT, encoding="utf-8") as f:
            same = f.read() == text
        print("catalog.json is up to date" if same else "catalog.json differs from what derive.py writes")
        sys.exit(0 if same else 1)
    with open(OUTPUT, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    counts = {}
    for c in CASES:
        counts[c["construct"]] = counts.get(c["construct"], 0) + 1
    print("wrote %d cases to %s" % (len(CASES), os.path.relpath(OUTPUT)))
    for construct in sorted(counts):
        print("  %-14s %d" % (construct, counts[construct]))


if __name__ == "__main__":
    main()
