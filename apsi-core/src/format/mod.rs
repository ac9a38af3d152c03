//! Text forms of values: Python's float repr, `str`/`repr` of values and
//! the format mini-language of f-strings.
