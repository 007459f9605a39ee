# M-Act per layer (last step, mean over seeds; log scale)
# written by `gated report`; run `gnuplot sink_search_lr-m_act.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'sink_search_lr-m_act.svg'
set grid
set key outside right top
set title 'sink_search_lr'
set xlabel 'layer'
set xtics 1
set logscale y
set ylabel 'M-Act (max |h| of the layer output, log scale)'
plot 'sink_search_lr-m_act.dat' index 0 using 1:2 with linespoints title 'lr-2e-2', \
     'sink_search_lr-m_act.dat' index 1 using 1:2 with linespoints title 'lr-3e-2'
set terminal pngcairo size 960,560 noenhanced
set output 'sink_search_lr-m_act.png'
replot
set output
