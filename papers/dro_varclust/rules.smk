# dro_varclust has no paper-specific rules: the data are synthetic (generated from seeds) or shipped with scikit-learn.
