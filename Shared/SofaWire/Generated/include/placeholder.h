int sofa_wire_placeholder(void);
