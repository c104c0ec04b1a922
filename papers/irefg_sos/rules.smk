# irefg_sos: fetch the mirrored imperfect-recall games (canonical URL first, or the REPRO_DATA_MIRROR copy when
# set), verified by the SHA-256 of their canonical text (papers/irefg_sos/games.py: MIRRORED). Quick and full read
# these files; the smoke scale uses picc_rub_fig3 and wichardt2008 built in code (games.py: CODE_GAMES).
import sys as _irefg_sys
if workflow.basedir not in _irefg_sys.path:
    _irefg_sys.path.insert(0, workflow.basedir)

IREFG_SOS_FILES = ["absentminded_driver.txt", "extended_abs_driver.txt", "picc_rub_fig2.txt", "picc_rub_fig3.txt",
                   "picc_rub_fig6.txt", "wichardt2008.efg"]


rule irefg_sos_fetch:
    output:
        "data/irefg_sos/{gamefile}",
    wildcard_constraints:
        gamefile="|".join(f.replace(".", r"\.") for f in IREFG_SOS_FILES),
    log:
        "logs/irefg_sos/fetch_{gamefile}.log",
    run:
        from pathlib import Path

        from papers.irefg_sos.games import game_file

        game_file(Path(output[0]).stem, Path(output[0]).parent)
