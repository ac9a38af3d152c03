//! The prelude and the methods of the built-in types.
