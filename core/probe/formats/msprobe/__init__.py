"""msProbe's dump format: ``dump.json`` / ``debug.json``, ``stack.json`` and their spellings.

* :mod:`.reader`   the reader (``msprobe-json``): header checks, entries in file order;
* :mod:`.flatten`  entries -> one :class:`~probe.model.Row` per leaf, in msProbe's names and order;
* :mod:`.dtypes`   dtype spellings of both dumpers (``torch.float32`` / ``Float32``) and the
  torch type names msProbe writes (``torch.Size``, ``torch.ProcessGroup``);
* :mod:`.stack`    ``stack.json`` in its two layouts.

PyTorch and MindSpore dumps share this format; what differs between the frameworks beyond
spellings (API tables, Cell/Module rules) lives in the framework plugins.
"""
