# the lightning indexer's KL against step (its dense warm-up: over every key; after it: over the selected keys), mean +- std over seeds
# written by `gated report`; run `gnuplot t512_topk-sparse-indexer-kl.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 't512_topk-sparse-indexer-kl.svg'
set grid
set key below
set title 't512_topk'
set xlabel 'step'
set ylabel 'indexer KL (nats)'
plot 't512_topk-sparse-indexer-kl.dat' index 0 using 1:2 with linespoints lc rgb '#009e73' dt 1 pt 3 title 'topk64 (warm-up, every key)', \
     't512_topk-sparse-indexer-kl.dat' index 1 using 1:2 with linespoints lc rgb '#009e73' dt 2 pt 3 title 'topk64 (sparse, over S)', \
     't512_topk-sparse-indexer-kl.dat' index 2 using 1:2 with linespoints lc rgb '#cc79a7' dt 1 pt 4 title 'topk64-G1 (warm-up, every key)', \
     't512_topk-sparse-indexer-kl.dat' index 3 using 1:2 with linespoints lc rgb '#cc79a7' dt 2 pt 4 title 'topk64-G1 (sparse, over S)', \
     't512_topk-sparse-indexer-kl.dat' index 4 using 1:2 with linespoints lc rgb '#e69f00' dt 1 pt 5 title 'topk32 (warm-up, every key)', \
     't512_topk-sparse-indexer-kl.dat' index 5 using 1:2 with linespoints lc rgb '#e69f00' dt 2 pt 5 title 'topk32 (sparse, over S)', \
     't512_topk-sparse-indexer-kl.dat' index 6 using 1:2 with linespoints lc rgb '#56b4e9' dt 1 pt 6 title 'topk32-G1 (warm-up, every key)', \
     't512_topk-sparse-indexer-kl.dat' index 7 using 1:2 with linespoints lc rgb '#56b4e9' dt 2 pt 6 title 'topk32-G1 (sparse, over S)', \
     't512_topk-sparse-indexer-kl.dat' index 8 using 1:2 with linespoints lc rgb '#000000' dt 1 pt 7 title 'topk64-G1-headwise (warm-up, every key)', \
     't512_topk-sparse-indexer-kl.dat' index 9 using 1:2 with linespoints lc rgb '#000000' dt 2 pt 7 title 'topk64-G1-headwise (sparse, over S)'
set terminal pngcairo size 960,560 noenhanced
set output 't512_topk-sparse-indexer-kl.png'
replot
set output
