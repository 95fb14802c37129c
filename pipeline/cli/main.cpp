// Placeholder entry point; h3 replaces this with the CLI11 command line.
int main() { return 0; }
