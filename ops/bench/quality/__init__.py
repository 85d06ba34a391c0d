"""``bench quality``: the seeded chats (``data``, ``kinds``, ``en``, ``zh``), the public
datasets (``real``, ``realmem``, ``madial``), the runners (``generated``, ``replay``), the
raw-text baselines, the scores and their tables, and the calibration fit (``calibrate``)."""
