"""Texts the embedding builds must agree on although the tokenizer treats their characters specially: shared by
the onnxruntime builds' test (test_embed.py) and the int8 build's (test_use_int8.py)."""

TRICKY = [
    "# --- exactness " + "-" * 69,
    "emoji 🎉🙂 and ümlaut café naïve",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ  １２３ ",
    "日本語のテキストと한국어 텍스트",
    "\t tab\nnewline\r\n  extra   spaces ",
    "x" * 300,
    "a\u0301e\u0300 Ⅻ ﬁ ㍿ ½",
]
