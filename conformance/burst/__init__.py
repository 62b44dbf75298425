"""The burst wing: the concurrent exhaustion of a key's quota (spender), what it is made of
(waves: its waves, their rates, what spending showed), how wide it may go and whether a quota is
beyond this machine (reach), its own HTTP/1.1 transport, and the sending of a wave from several
processes."""
