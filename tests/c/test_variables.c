#include "dist_strategy_test.h"
int main(void) { return 0; }
