"""What the analysis hands out: the JSON and HTML reports, figures, 2-D maps, JUnit and report diffs."""
