"""Where `CrossTokenizerDrafter` lived before `specdec.drafting`; kept so that older imports keep working."""

from specdec.drafting.cross_tokenizer import CrossTokenizerDrafter, retokenize, whole_character_tokens  # noqa: F401
