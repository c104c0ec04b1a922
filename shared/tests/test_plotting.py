import numpy as np
from PIL import Image

from shared.plotting import PNG_DPI, new_figure, plot_band, save_figure, vector_path


def _draw(path):
    fig, axes = new_figure()
    plot_band(axes[0, 0], np.arange(1, 6), np.arange(1, 6.0), np.arange(0.5, 5), np.arange(1.5, 6.5), label="m",
              color="#0072B2", log=True)
    return save_figure(fig, path)


def test_figures_are_300_dpi_png_with_a_pdf_twin_and_reproducible(tmp_path):
    png = _draw(tmp_path / "a" / "fig.png")
    pdf = vector_path(png)
    assert pdf.read_bytes().startswith(b"%PDF")
    dpi = Image.open(png).info["dpi"]
    assert round(dpi[0]) == PNG_DPI
    first = (png.read_bytes(), pdf.read_bytes())
    _draw(png)
    assert (png.read_bytes(), pdf.read_bytes()) == first


def test_method_colors_are_distinct_for_up_to_32_methods_and_fixed_by_order():
    from shared.plotting import PALETTE, method_colors

    names = [f"m{i}" for i in range(32)]
    colours = method_colors(names)
    assert len(set(colours.values())) == 32
    assert [colours[f"m{i}"] for i in range(12)] == list(PALETTE)
    assert method_colors(names[:3]) == {k: colours[k] for k in names[:3]}
