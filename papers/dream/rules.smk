# dream has no paper-specific rules: the quadratics are generated and the digits ship with scikit-learn.
