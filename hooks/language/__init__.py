"""The words the article measures itself by: the condition language (`conditions`) that claims and figures
are judged in, and the vocabulary of qualitative words (`vocabulary`, docs/vocabulary.yml) with the noise
margin. Below both the figures (hooks/demos/) and the claims (hooks/claims/): it imports neither."""
