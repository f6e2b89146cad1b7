"""The training data every trainer shares, below all of them: trajectory records read for
training (:mod:`.records`), trajectory preference pairs and the rules that choose them
(:mod:`.pairs`), and where each agent turn sits in a tokenized conversation (:mod:`.spans`).

WHY a package of its own: the critic, the actor, RFT and multi-turn DPO all read the same
records, pairs and spans; kept in one trainer's package they made the others import it.
Nothing here imports torch.
"""
