# validation perplexity against context length, mean +- std over seeds
# written by `gated report`; run `gnuplot long_context_continued-ppl-vs-length.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'long_context_continued-ppl-vs-length.svg'
set grid
set key below
set title 'long_context_continued'
set logscale x 2
set logscale y
set format x '%g'
set format y '%g'
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05
set xlabel 'context length (tokens, log2 scale)'
set ylabel 'validation PPL (log scale), mean +- std over seeds'
set arrow from 512, graph 0 to 512, graph 1 nohead dt 3
set ytics ("7.5" 7.5, "8" 8, "8.5" 8.5, "9" 9)
plot 'long_context_continued-ppl-vs-length.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'baseline (none)', \
     'long_context_continued-ppl-vs-length.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'G1-elementwise (none)', \
     'long_context_continued-ppl-vs-length.dat' index 2 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 1 pt 3 title 'G1-headwise (none)', \
     'long_context_continued-ppl-vs-length.dat' index 3 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 2 pt 1 title 'baseline (yarn)', \
     'long_context_continued-ppl-vs-length.dat' index 4 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 2 pt 2 title 'G1-elementwise (yarn)', \
     'long_context_continued-ppl-vs-length.dat' index 5 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 2 pt 3 title 'G1-headwise (yarn)'
set terminal pngcairo size 960,560 noenhanced
set output 'long_context_continued-ppl-vs-length.png'
replot
set output
