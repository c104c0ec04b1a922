# romberg_zoge: fit the frozen digits classifier of the prompt-tuning substitute once (scikit-learn digits ship
# with the package; MLPClassifier(hidden_layer_sizes=(128,), max_iter=120, random_state=0) on the 900 source
# images) and cache its weights; the prompt and performance experiments list the file under `inputs:`.
rule romberg_zoge_data_frozen_model:
    output:
        "data/romberg_zoge/frozen_mlp.npz"
    log:
        "logs/romberg_zoge/data_frozen_model.log"
    params:
        python=PYTHON,
    conda:
        CONDA_ENV
    shell:
        "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "
        "{params.python} -m papers.romberg_zoge.frozen_model {output} > {log} 2>&1"
