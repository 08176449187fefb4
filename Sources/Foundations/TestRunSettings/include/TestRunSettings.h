// Settings the test process takes before Swift Testing reads its environment (see the .c file).
