# F-Attn per layer and query head, last step, mean over seeds; one panel per row
# written by `gated report`; run `gnuplot table1_positions-fattn-heads.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'table1_positions-fattn-heads.svg'
set grid
set key below
unset grid
unset key
set title 'table1_positions' offset 0,2
set cbrange [0:1]
set cblabel 'F-Attn (share of attention on position 0)'
set palette defined (0 '#440154', 1 '#472d7b', 2 '#3b528b', 3 '#2c728e', 4 '#21918c', 5 '#28ae80', 6 '#5ec962', 7 '#addc30', 8 '#fde725')
set xlabel 'query head (one panel per row)'
set ylabel 'layer'
set ytics 1
set xtics () scale 0
set tmargin 5
set xtics add ('0' 0)
set xtics add ('1' 1)
set xtics add ('2' 2)
set xtics add ('3' 3)
set label 1 'baseline' at 1.5, graph 1.03 center
set xtics add ('0' 5)
set xtics add ('1' 6)
set xtics add ('2' 7)
set xtics add ('3' 8)
set label 2 'more-kv-heads' at 6.5, graph 1.08 center
set xtics add ('0' 10)
set xtics add ('1' 11)
set xtics add ('2' 12)
set xtics add ('3' 13)
set xtics add ('4' 14)
set xtics add ('5' 15)
set label 3 'more-q-heads' at 12.5, graph 1.03 center
set xtics add ('0' 17)
set xtics add ('1' 18)
set xtics add ('2' 19)
set xtics add ('3' 20)
set label 4 'G1-elementwise' at 18.5, graph 1.08 center
set xtics add ('0' 22)
set xtics add ('1' 23)
set xtics add ('2' 24)
set xtics add ('3' 25)
set label 5 'G2-elementwise' at 23.5, graph 1.03 center
set xtics add ('0' 27)
set xtics add ('1' 28)
set xtics add ('2' 29)
set xtics add ('3' 30)
set label 6 'G3-elementwise' at 28.5, graph 1.08 center
set xtics add ('0' 32)
set xtics add ('1' 33)
set xtics add ('2' 34)
set xtics add ('3' 35)
set label 7 'G4-elementwise' at 33.5, graph 1.03 center
set xtics add ('0' 37)
set xtics add ('1' 38)
set xtics add ('2' 39)
set xtics add ('3' 40)
set label 8 'G5' at 38.5, graph 1.08 center
set xtics add ('0' 42)
set xtics add ('1' 43)
set xtics add ('2' 44)
set xtics add ('3' 45)
set label 9 'G1-headwise' at 43.5, graph 1.03 center
set xtics add ('0' 47)
set xtics add ('1' 48)
set xtics add ('2' 49)
set xtics add ('3' 50)
set label 10 'G2-headwise' at 48.5, graph 1.08 center
set xtics add ('0' 52)
set xtics add ('1' 53)
set xtics add ('2' 54)
set xtics add ('3' 55)
set label 11 'G1-head-shared' at 53.5, graph 1.03 center
set xtics add ('0' 57)
set xtics add ('1' 58)
set xtics add ('2' 59)
set xtics add ('3' 60)
set label 12 'G2-head-shared' at 58.5, graph 1.08 center
set xtics add ('0' 62)
set xtics add ('1' 63)
set xtics add ('2' 64)
set xtics add ('3' 65)
set label 13 'G1-additive-silu' at 63.5, graph 1.03 center
set xtics add ('0' 67)
set xtics add ('1' 68)
set xtics add ('2' 69)
set xtics add ('3' 70)
set label 14 'G1-silu' at 68.5, graph 1.08 center
set xrange [-0.5:70.5]
set yrange [-0.5:3.5]
plot 'table1_positions-fattn-heads.dat' index 0 matrix using ($1+0):2:3 with image, \
     'table1_positions-fattn-heads.dat' index 1 matrix using ($1+5):2:3 with image, \
     'table1_positions-fattn-heads.dat' index 2 matrix using ($1+10):2:3 with image, \
     'table1_positions-fattn-heads.dat' index 3 matrix using ($1+17):2:3 with image, \
     'table1_positions-fattn-heads.dat' index 4 matrix using ($1+22):2:3 with image, \
     'table1_positions-fattn-heads.dat' index 5 matrix using ($1+27):2:3 with image, \
     'table1_positions-fattn-heads.dat' index 6 matrix using ($1+32):2:3 with image, \
     'table1_positions-fattn-heads.dat' index 7 matrix using ($1+37):2:3 with image, \
     'table1_positions-fattn-heads.dat' index 8 matrix using ($1+42):2:3 with image, \
     'table1_positions-fattn-heads.dat' index 9 matrix using ($1+47):2:3 with image, \
     'table1_positions-fattn-heads.dat' index 10 matrix using ($1+52):2:3 with image, \
     'table1_positions-fattn-heads.dat' index 11 matrix using ($1+57):2:3 with image, \
     'table1_positions-fattn-heads.dat' index 12 matrix using ($1+62):2:3 with image, \
     'table1_positions-fattn-heads.dat' index 13 matrix using ($1+67):2:3 with image
set terminal pngcairo size 960,560 noenhanced
set output 'table1_positions-fattn-heads.png'
replot
set output
