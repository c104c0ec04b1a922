# opo_cmab has no paper-specific rules: the synthetic class is generated inside the experiments and the streams come from scikit-learn's shipped data sets or are regenerated from the MONK rules.
