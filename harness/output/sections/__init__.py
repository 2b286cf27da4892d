"""What the report's tables share: the columns every timed table has (`common`), and the timed sections' columns,
captions and rows (`timed`). Each table itself is its experiment's (`harness.experiments`)."""
