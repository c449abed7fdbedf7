"""Label and field selectors: kube's grammar, its error messages, and its matching rules.

Cases come from ``k8s.io/apimachinery/pkg/labels/selector.go`` (its grammar comment and
``selector_test.go``), ``pkg/fields/selector.go``, ``metav1.LabelSelectorAsSelector`` and the
"Labels and Selectors" concept page of the Kubernetes documentation.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubetrain.local.apiserver import selectors

NAME_REGEX = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    f"used for validation is '{NAME_REGEX}')"
)
VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    f"'my_value',  or '12345', regex used for validation is '({NAME_REGEX})?')"
)
PREFIX_PART = (
    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
    "'example.com', regex used for validation is "
    r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
OPERATORS = "in, notin, =, ==, !=, gt, lt"


# ---------------------------------------------------------------------------- label grammar


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        pytest.param("", "", id="the empty string selects everything"),
        pytest.param("   ", "", id="blanks alone select everything"),
        pytest.param("app=web", "app=web", id="equality"),
        pytest.param("app==web", "app==web", id="double equals is kept as written"),
        pytest.param("app!=web", "app!=web", id="inequality"),
        pytest.param("app in (web,api)", "app in (api,web)", id="set membership sorts values"),
        pytest.param("app notin (web)", "app notin (web)", id="set exclusion"),
        pytest.param("app", "app", id="a bare key means the key exists"),
        pytest.param("!app", "!app", id="a bang means the key does not exist"),
        pytest.param("tier=db,app=web", "app=web,tier=db", id="terms are sorted by key"),
        pytest.param(
            " app = web ,  tier  in ( a , b ) ", "app=web,tier in (a,b)", id="blanks are tolerated"
        ),
        pytest.param("a=b\t,\nc", "a=b,c", id="tabs and newlines are blanks too"),
        pytest.param("app=", "app=", id="an empty value after equals"),
        pytest.param(
            "x in (foo,,baz),y,z notin ()",
            "x in (,baz,foo),y,z notin ()",
            id="the grammar comment's example with empty values",
        ),
        pytest.param("x in (,a)", "x in (,a)", id="a leading empty value"),
        pytest.param("x in (a,)", "x in (,a)", id="a trailing empty value"),
        pytest.param(
            "in in (in,notin)", "in in (in,notin)", id="keywords are words where values go"
        ),
        pytest.param("replicas>2", "replicas>2", id="greater than"),
        pytest.param("replicas<10", "replicas<10", id="less than"),
        pytest.param(
            "example.com/tier=db", "example.com/tier=db", id="a key with a DNS subdomain prefix"
        ),
        pytest.param("a-b_c.d=E-f_g.h", "a-b_c.d=E-f_g.h", id="punctuation inside names"),
        pytest.param("k=" + "v" * 63, "k=" + "v" * 63, id="a value of 63 characters"),
    ],
)
def test_a_label_selector_parses_to_its_canonical_form(text: str, canonical: str) -> None:
    assert str(selectors.parse_label_selector(text)) == canonical


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "a b",
            f"unable to parse requirement: found 'b', expected: {OPERATORS}",
            id="two words without an operator",
        ),
        pytest.param(
            "a!",
            f"unable to parse requirement: found '!', expected: {OPERATORS}",
            id="a stray bang",
        ),
        pytest.param(
            "a gt 1",
            f"unable to parse requirement: found 'gt', expected: {OPERATORS}",
            id="gt is not a word operator",
        ),
        pytest.param("a=b=c", "found '=', expected: ',' or 'end of string'", id="two equals"),
        pytest.param("a=b c", "found 'c', expected: ',' or 'end of string'", id="a missing comma"),
        pytest.param(
            "!a=b", "found '=', expected: ',' or 'end of string'", id="not-exists takes no value"
        ),
        pytest.param("a,", "found '', expected: identifier after ','", id="a trailing comma"),
        pytest.param(
            ",a", "found ',', expected: !, identifier, or 'end of string'", id="a leading comma"
        ),
        pytest.param(
            "=a", "found '=', expected: !, identifier, or 'end of string'", id="no key at all"
        ),
        pytest.param(
            "!", "unable to parse requirement: found '', expected: identifier", id="a bang alone"
        ),
        pytest.param(
            "a in x", "unable to parse requirement: found 'x' expected: '('", id="in without a set"
        ),
        pytest.param(
            "a in", "unable to parse requirement: found '' expected: '('", id="in at the end"
        ),
        pytest.param(
            "a in (x y)",
            "unable to parse requirement: found 'y', expected: ',' or ')'",
            id="values without a comma",
        ),
        pytest.param(
            "a in (x",
            "unable to parse requirement: found '', expected: ',' or ')'",
            id="an unclosed set",
        ),
        pytest.param(
            "a in (=)",
            "unable to parse requirement: found '=', expected: ',', ')' or identifier",
            id="an operator inside a set",
        ),
        pytest.param(
            "a=(",
            "unable to parse requirement: found '(', expected: identifier",
            id="a paren value",
        ),
        pytest.param(
            "-a=b",
            f'unable to parse requirement: <nil>: Invalid value: "-a": {NAME_PART}',
            id="a key starting with a dash",
        ),
        pytest.param(
            "app:web",
            f'unable to parse requirement: <nil>: Invalid value: "app:web": {NAME_PART}',
            id="a colon is not an operator",
        ),
        pytest.param(
            "app.kubernetes_io/name=web",
            'unable to parse requirement: <nil>: Invalid value: "app.kubernetes_io/name": '
            + PREFIX_PART,
            id="an underscore in the prefix",
        ),
        pytest.param(
            "/name=web",
            'unable to parse requirement: <nil>: Invalid value: "/name": '
            "prefix part must be non-empty",
            id="an empty prefix",
        ),
        pytest.param(
            "a/b/c=d",
            'unable to parse requirement: <nil>: Invalid value: "a/b/c": a valid label key must '
            "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            f"validation is '{NAME_REGEX}') with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')",
            id="two slashes in a key",
        ),
        pytest.param(
            "k" * 64 + "=v",
            f'unable to parse requirement: <nil>: Invalid value: "{"k" * 64}": '
            "name part must be no more than 63 bytes",
            id="a key name over 63 characters",
        ),
        pytest.param(
            "a=" + "v" * 64,
            f'unable to parse requirement: values[0][a]: Invalid value: "{"v" * 64}": '
            "must be no more than 63 bytes",
            id="a value over 63 characters",
        ),
        pytest.param(
            "a=-v",
            f'unable to parse requirement: values[0][a]: Invalid value: "-v": {VALUE_RULE}',
            id="a value starting with a dash",
        ),
        pytest.param(
            "a in (b,_y)",
            f'unable to parse requirement: values[0][a]: Invalid value: "_y": {VALUE_RULE}',
            id="a bad value in a set is indexed in sorted order",
        ),
        pytest.param(
            "a>x",
            'unable to parse requirement: values[0]: Invalid value: "x": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
            id="gt needs an integer",
        ),
    ],
)
def test_a_malformed_label_selector_is_refused_with_kubes_message(text: str, message: str) -> None:
    with pytest.raises(selectors.SelectorError) as caught:
        selectors.parse_label_selector(text)
    assert str(caught.value) == message


# --------------------------------------------------------------------------- label matching


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        pytest.param("", {}, True, id="everything matches an unlabelled object"),
        pytest.param("app=web", {"app": "web"}, True, id="equality matches the same value"),
        pytest.param("app==web", {"app": "api"}, False, id="equality misses another value"),
        pytest.param("app=web", {}, False, id="equality misses an object without the label"),
        pytest.param("app!=web", {"app": "api"}, True, id="inequality matches another value"),
        pytest.param("app!=web", {"app": "web"}, False, id="inequality misses the same value"),
        pytest.param("app!=web", {}, True, id="inequality matches an object without the label"),
        pytest.param("env in (prod,qa)", {"env": "qa"}, True, id="in matches a listed value"),
        pytest.param("env in (prod,qa)", {"env": "dev"}, False, id="in misses an unlisted value"),
        pytest.param("env in (prod,qa)", {}, False, id="in misses an object without the label"),
        pytest.param("env notin (prod)", {"env": "dev"}, True, id="notin matches another value"),
        pytest.param("env notin (prod)", {"env": "prod"}, False, id="notin misses a listed value"),
        pytest.param("env notin (prod)", {}, True, id="notin matches an object without the label"),
        pytest.param("env in ()", {"env": ""}, True, id="an empty set holds the empty value"),
        pytest.param("env=", {"env": ""}, True, id="equals nothing matches an empty value"),
        pytest.param("env=", {}, False, id="equals nothing still needs the label"),
        pytest.param("gpu", {"gpu": ""}, True, id="exists matches any value, even empty"),
        pytest.param("gpu", {"cpu": "1"}, False, id="exists misses an object without the key"),
        pytest.param("!gpu", {"cpu": "1"}, True, id="not exists matches without the key"),
        pytest.param("!gpu", {"gpu": "a100"}, False, id="not exists misses with the key"),
        pytest.param("rank>2", {"rank": "3"}, True, id="greater than compares as integers"),
        pytest.param("rank>2", {"rank": "10"}, True, id="greater than is not a string order"),
        pytest.param("rank>2", {"rank": "2"}, False, id="greater than is strict"),
        pytest.param("rank<2", {"rank": "x"}, False, id="a non-integer label never compares"),
        pytest.param("rank<2", {}, False, id="less than needs the label"),
        pytest.param(
            "app=web,tier!=db,!canary",
            {"app": "web", "tier": "cache"},
            True,
            id="every term must match",
        ),
        pytest.param(
            "app=web,tier!=db", {"app": "web", "tier": "db"}, False, id="one failing term fails all"
        ),
    ],
)
def test_a_label_selector_matches_as_kube_does(
    text: str, labels: dict[str, str], expected: bool
) -> None:
    assert selectors.parse_label_selector(text).matches(labels) is expected


def test_a_selector_matches_an_object_with_no_labels_map() -> None:
    assert selectors.parse_label_selector("!app").matches(None)


@pytest.mark.parametrize(
    ("text", "empty"),
    [
        pytest.param("", True, id="no terms is empty"),
        pytest.param("a", False, id="one term is not empty"),
    ],
)
def test_an_empty_selector_reports_it(text: str, empty: bool) -> None:
    assert selectors.parse_label_selector(text).empty is empty


# ------------------------------------------------------------------------ metav1.LabelSelector


@pytest.mark.parametrize(
    ("spec", "canonical", "labels", "expected"),
    [
        pytest.param({}, "", {}, True, id="an empty selector selects everything"),
        pytest.param(
            {"matchLabels": {"app": "web"}}, "app=web", {"app": "web"}, True, id="match labels"
        ),
        pytest.param(
            {
                "matchLabels": {"tier": "db", "app": "web"},
                "matchExpressions": [{"key": "env", "operator": "In", "values": ["qa", "prod"]}],
            },
            "app=web,env in (prod,qa),tier=db",
            {"app": "web", "tier": "db", "env": "qa"},
            True,
            id="labels and expressions together, sorted by key",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]},
            "env notin (prod)",
            {},
            True,
            id="NotIn matches an object without the label",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
            "gpu",
            {"gpu": "a100"},
            True,
            id="Exists",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist", "values": []}]},
            "!gpu",
            {"gpu": "a100"},
            False,
            id="DoesNotExist with an empty values list",
        ),
    ],
)
def test_a_metav1_label_selector_converts_and_matches(
    spec: dict[str, Any], canonical: str, labels: dict[str, str], expected: bool
) -> None:
    selector = selectors.label_selector_from_spec(spec)
    assert str(selector) == canonical
    assert selector.matches(labels) is expected


def test_a_missing_metav1_label_selector_selects_nothing() -> None:
    selector = selectors.label_selector_from_spec(None)
    assert not selector.matches({})
    assert not selector.empty


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"matchExpressions": [{"key": "env", "operator": "In"}]},
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
            id="In without values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": []}]},
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
            id="NotIn with an empty list",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "gpu", "operator": "Exists", "values": ["a"]}]},
            'values: Invalid value: ["a"]: values set must be empty for exists and does not exist',
            id="Exists with values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist", "values": ["a"]}]},
            'values: Invalid value: ["a"]: values set must be empty for exists and does not exist',
            id="DoesNotExist with values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "gpu", "operator": "Gt", "values": ["1"]}]},
            '"Gt" is not a valid label selector operator',
            id="an operator of node selectors only",
        ),
        pytest.param(
            {"matchLabels": {"-app": "web"}},
            f'key: Invalid value: "-app": {NAME_PART}',
            id="a bad key in match labels",
        ),
        pytest.param(
            {"matchLabels": {"app": "-web"}},
            f'values[0][app]: Invalid value: "-web": {VALUE_RULE}',
            id="a bad value in match labels",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "-k", "operator": "In"}]},
            f'[key: Invalid value: "-k": {NAME_PART}, values: Invalid value: null: '
            "for 'in', 'notin' operators, values set can't be empty]",
            id="every problem of one expression at once",
        ),
        pytest.param(
            {"matchLabels": ["app"]},
            "matchLabels: must be an object of string values",
            id="match labels that are not a map",
        ),
        pytest.param(
            {"matchExpressions": [{"operator": "Exists"}]},
            "matchExpressions[0].key: Required value",
            id="an expression without a key",
        ),
        pytest.param("app=web", "a label selector must be an object, not a string", id="a string"),
    ],
)
def test_a_bad_metav1_label_selector_is_refused(spec: Any, message: str) -> None:
    with pytest.raises(selectors.SelectorError) as caught:
        selectors.label_selector_from_spec(spec)
    assert str(caught.value) == message


# ---------------------------------------------------------------------------- field selectors


@pytest.mark.parametrize(
    ("text", "canonical", "fields"),
    [
        pytest.param("", "", set(), id="the empty string selects everything"),
        pytest.param("metadata.name=a", "metadata.name=a", {"metadata.name"}, id="equality"),
        pytest.param("metadata.name==a", "metadata.name=a", {"metadata.name"}, id="double equals"),
        pytest.param("status.phase!=Running", "status.phase!=Running", {"status.phase"}, id="not"),
        pytest.param(
            "status.phase=Running,spec.nodeName=n1",
            "spec.nodeName=n1,status.phase=Running",
            {"spec.nodeName", "status.phase"},
            id="comma-joined terms are sorted",
        ),
        pytest.param("spec.nodeName=", "spec.nodeName=", {"spec.nodeName"}, id="an empty value"),
        pytest.param(
            r"metadata.name=a\,b\=c\\d",
            r"metadata.name=a\,b\=c\\d",
            {"metadata.name"},
            id="escaped comma, equals and backslash round-trip",
        ),
        pytest.param("a=b,,", "a=b", {"a"}, id="empty terms are skipped"),
    ],
)
def test_a_field_selector_parses(text: str, canonical: str, fields: set[str]) -> None:
    selector = selectors.parse_field_selector(text)
    assert str(selector) == canonical
    assert selector.fields == fields
    assert selector.empty is (not fields)


def test_field_selector_escapes_unescape_in_values() -> None:
    selector = selectors.parse_field_selector(r"metadata.name=a\,b\=c\\d")
    assert selector.requires_exact_match("metadata.name") == "a,b=c\\d"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "metadata.name",
            "invalid selector: 'metadata.name'; can't understand 'metadata.name'",
            id="a term without an operator",
        ),
        pytest.param(
            "a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'", id="one bad term of two"
        ),
        pytest.param(
            "a=b=c",
            "invalid field selector: unescaped character in value: 61",
            id="an unescaped equals in a value (kube prints the code point)",
        ),
        pytest.param(
            r"a=b\x",
            r"invalid field selector: invalid escape sequence: \x",
            id="an unknown escape",
        ),
        pytest.param(
            "a=b\\",
            "invalid field selector: invalid escape sequence: \\",
            id="a lone slash",
        ),
    ],
)
def test_a_malformed_field_selector_is_refused_with_kubes_message(text: str, message: str) -> None:
    with pytest.raises(selectors.SelectorError) as caught:
        selectors.parse_field_selector(text)
    assert str(caught.value) == message


POD = {
    "metadata": {"name": "web-0", "namespace": "team-a"},
    "spec": {"nodeName": "node-1", "schedulerName": "default-scheduler", "hostNetwork": False},
    "status": {"phase": "Running"},
}
PENDING_POD = {"metadata": {"name": "web-1", "namespace": "team-a"}, "status": {"phase": "Pending"}}
EVENT = {"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "web-0"}}


@pytest.mark.parametrize(
    ("text", "obj", "expected"),
    [
        pytest.param("metadata.name=web-0", POD, True, id="by name"),
        pytest.param("metadata.namespace=team-b", POD, False, id="by namespace"),
        pytest.param("spec.nodeName=node-1", POD, True, id="by node"),
        pytest.param("spec.nodeName=", PENDING_POD, True, id="an unscheduled pod has node empty"),
        pytest.param("spec.nodeName!=", POD, True, id="a scheduled pod has a node"),
        pytest.param("spec.nodeName!=", PENDING_POD, False, id="not empty misses an unscheduled"),
        pytest.param("status.phase!=Running", PENDING_POD, True, id="by phase, negated"),
        pytest.param(
            "status.phase=Running,metadata.name=web-1", POD, False, id="every term must match"
        ),
        pytest.param("spec.schedulerName=default-scheduler", POD, True, id="by scheduler name"),
        pytest.param("spec.hostNetwork=false", POD, True, id="a boolean reads as false or true"),
        pytest.param("involvedObject.name=web-0", EVENT, True, id="an event by its object"),
        pytest.param("involvedObject.kind=Node", EVENT, False, id="an event by its object kind"),
        pytest.param("metadata.name.extra=", POD, True, id="a path through a scalar reads empty"),
        pytest.param("spec=", POD, True, id="a map reads as empty"),
    ],
)
def test_a_field_selector_matches_objects_by_dotted_path(
    text: str, obj: dict[str, Any], expected: bool
) -> None:
    assert selectors.parse_field_selector(text).matches(obj) is expected


def test_a_field_selector_matches_precomputed_fields() -> None:
    # The server may build kube's per-resource field set itself (an event's "source" field).
    selector = selectors.parse_field_selector("source=kubelet,type!=Normal")
    assert selector.matches_fields({"source": "kubelet", "type": "Warning"})
    assert not selector.matches_fields({"source": "kubelet", "type": "Normal"})


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        pytest.param("metadata.name=a", "metadata.name", "a", id="an equality term"),
        pytest.param("metadata.name!=a", "metadata.name", None, id="not for an inequality"),
        pytest.param("spec.nodeName=n", "metadata.name", None, id="not for another field"),
    ],
)
def test_a_field_selector_tells_what_value_a_field_must_have(
    text: str, field: str, value: str | None
) -> None:
    assert selectors.parse_field_selector(text).requires_exact_match(field) == value


# -------------------------------------------------------------------------------- properties

KEYS = st.sampled_from(["app", "tier", "example.com/role", "a.b-c_d", "x"])
VALUES = st.sampled_from(["", "web", "db", "1", "in", "v.2-b_c"])
REQUIREMENTS = st.one_of(
    st.builds(
        lambda key, op, value: selectors.new_requirement(key, op, [value]),
        KEYS,
        st.sampled_from(
            [
                selectors.Operator.EQUALS,
                selectors.Operator.DOUBLE_EQUALS,
                selectors.Operator.NOT_EQUALS,
            ]
        ),
        VALUES,
    ),
    st.builds(
        lambda key, op, values: selectors.new_requirement(key, op, sorted(values)),
        KEYS,
        st.sampled_from([selectors.Operator.IN, selectors.Operator.NOT_IN]),
        st.sets(VALUES, min_size=1),
    ),
    st.builds(
        lambda key, op: selectors.new_requirement(key, op),
        KEYS,
        st.sampled_from([selectors.Operator.EXISTS, selectors.Operator.DOES_NOT_EXIST]),
    ),
)


@given(st.lists(REQUIREMENTS, max_size=4))
def test_a_label_selector_survives_printing_and_parsing(
    requirements: list[selectors.Requirement],
) -> None:
    selector = selectors.LabelSelector(tuple(sorted(requirements, key=lambda r: r.key)))
    assert selectors.parse_label_selector(str(selector)) == selector


@given(st.text(alphabet="ab=!(), \tin", max_size=16) | st.text(max_size=16))
def test_any_text_parses_or_fails_with_a_selector_error(text: str) -> None:
    for parse in (selectors.parse_label_selector, selectors.parse_field_selector):
        with contextlib.suppress(selectors.SelectorError):
            parse(text)
