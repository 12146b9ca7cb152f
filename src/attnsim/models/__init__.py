"""Real models and real text: MiniLM (numpy BERT), GloVe vectors, an English corpus, and the
files they are read from (`assets`: fetched once into resources/ and verified)."""
