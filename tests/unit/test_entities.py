import pytest

from reference.cells.entities import EntityIndex, extract_entities


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Send report_q3.pdf to bob.smith@example.com", {"report_q3.pdf", "bob.smith@example.com"}),
        ("See https://example.org/a/b?x=1 today", {"https://example.org/a/b?x=1"}),
        ("The bug is in src/app/main.py, line 4.", {"src/app/main.py"}),
        ("Edit /etc/hosts first", {"/etc/hosts"}),
        ("Ticket INC-20931 was closed", {"inc-20931"}),
        ("What is Maria Lopez's email?", {"maria lopez"}),
        ("Where does Sean O'Brien live?", {"sean o'brien"}),
        ("I banked at the Bank of England.", {"bank of england"}),
        ("Yesterday Maria Lopez called.", {"maria lopez", "yesterday maria lopez"}),
        ("The quick brown fox. Then it slept.", set()),
        ("lower case words only", set()),
        ("The end.Then we left", set()),
    ],
)
def test_extraction(text, expected):
    assert extract_entities(text) == expected


def test_entities_are_normalised_to_lower_case():
    assert extract_entities("Mail ALICE@EXAMPLE.COM") == extract_entities("mail alice@example.com")


def test_index_counts_matches_and_forgets_removed_rows():
    index = EntityIndex()
    index.add(0, frozenset({"maria lopez", "a.txt"}))
    index.add(1, frozenset({"maria lopez"}))
    assert index.matches(frozenset({"maria lopez", "a.txt"})) == {0: 2, 1: 1}
    index.remove(0)
    assert index.matches(frozenset({"a.txt"})) == {}
    assert len(index) == 1
