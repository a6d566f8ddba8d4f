// Package wordcountops counts words with operators: flatMapValues breaks
// sentences into lower-case words, groupBy groups them by the word (through
// a repartition topic), count keeps a running count per word in store
// "counts", and toStream sends each new count to topic word-counts. The
// processor form of the same application is examples/wordcount.
package wordcountops

//go:generate go tool kgen generate
