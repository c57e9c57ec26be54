/* Placeholder until the generated code lands. */
int sofa_wire_placeholder(void) { return 0; }
