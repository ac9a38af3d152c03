//! The bytecode compiler: resolved syntax tree to register bytecode.
