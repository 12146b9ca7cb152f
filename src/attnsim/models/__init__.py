"""Real models and real text: MiniLM (numpy BERT), GloVe vectors, an English corpus."""
