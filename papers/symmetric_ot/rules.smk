# symmetric_ot: every problem is generated inside its experiment from the seed (digits ship with scikit-learn); no paper-specific rules.
