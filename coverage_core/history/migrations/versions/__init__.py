"""One module per schema revision; each is frozen once released, so an old history always migrates the same way."""
