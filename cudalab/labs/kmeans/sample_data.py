"""Real clustered data for k-means, made here from a photograph: the kind of image features the
classic Northwestern codes were run on (their colour and texture files, about 17,700 images),
without a download. The photograph is the one matplotlib ships with its sample data (Grace
Hopper, 600 x 512 RGB), so every machine with the project's dependencies makes the same points."""

from __future__ import annotations

import numpy as np

BLOCK = 4  # features are computed over BLOCK x BLOCK pixel blocks: 150 x 128 = 19,200 of them


def _blocks() -> np.ndarray:
    """The photograph's BLOCK x BLOCK blocks, row by row: (blocks, BLOCK², 3) RGB in [0, 1]."""
    import matplotlib.image as mpimg
    from matplotlib import cbook

    with cbook.get_sample_data("grace_hopper.jpg") as f:
        img = mpimg.imread(f, format="jpg").astype(np.float64) / 255.0
    h, w = img.shape[0] // BLOCK * BLOCK, img.shape[1] // BLOCK * BLOCK
    tiles = img[:h, :w].reshape(h // BLOCK, BLOCK, w // BLOCK, BLOCK, 3).swapaxes(1, 2)
    return tiles.reshape(-1, BLOCK * BLOCK, 3)


def image_features() -> dict[str, np.ndarray]:
    """Two float32 data sets of 19,200 points each: ``colour``, the colour moments of each block
    (the mean, standard deviation and cube root of the third central moment of each channel: D = 9,
    as the classic colour-moment features), and ``texture``, each block's grey levels (D = 16)."""
    px = _blocks()
    mean, std = px.mean(1), px.std(1)
    skew = np.cbrt(((px - mean[:, None]) ** 3).mean(1))
    return {
        "colour": np.concatenate([mean, std, skew], 1).astype(np.float32),
        "texture": px.mean(2).astype(np.float32),
    }
