# M-Act per layer (last step, mean over seeds; log scale)
# written by `gated report`; run `gnuplot lr_stability-m_act.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'lr_stability-m_act.svg'
set grid
set key outside right top
set title 'lr_stability'
set xlabel 'layer'
set xtics 1
set logscale y
set ylabel 'M-Act (max |h| of the layer output, log scale)'
plot 'lr_stability-m_act.dat' index 0 using 1:2 with linespoints title 'baseline-lr3.0e-3', \
     'lr_stability-m_act.dat' index 1 using 1:2 with linespoints title 'G1-matched-lr3.0e-3', \
     'lr_stability-m_act.dat' index 2 using 1:2 with linespoints title 'baseline-lr1.0e-2', \
     'lr_stability-m_act.dat' index 3 using 1:2 with linespoints title 'G1-matched-lr1.0e-2', \
     'lr_stability-m_act.dat' index 4 using 1:2 with linespoints title 'baseline-lr3.0e-2', \
     'lr_stability-m_act.dat' index 5 using 1:2 with linespoints title 'G1-matched-lr3.0e-2'
set terminal pngcairo size 960,560 noenhanced
set output 'lr_stability-m_act.png'
replot
set output
