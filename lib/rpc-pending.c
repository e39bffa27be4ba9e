/* rpc-pending.c: placeholder until implemented. */
