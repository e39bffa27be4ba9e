/* rpc-frame.c: placeholder until implemented. */
